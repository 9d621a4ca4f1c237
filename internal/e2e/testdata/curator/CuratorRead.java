// CuratorRead reads a namespace the way ShardingSphere's ZookeeperRepository
// does, with Curator (Debian's libcurator-framework-java and
// libcurator-recipes-java): a CuratorCache on the namespace whose listener
// takes every event's data as upstream's watch listener does
// (new String(childData.getData())), and after the actions a getData of
// every key, as upstream's query does (new String(client.getData()...)).
// Upstream throws a NullPointerException on a null znode in both places:
// the query fails, and the watch event is lost.
//
//   java CuratorRead SERVERS NAMESPACE
//
// It prints "ready" once the cache is initialized, then reads lines from
// stdin: "done KEY" says the actions are over and KEY, written last, ends
// the events to wait for. It then walks the namespace and prints
//   events N null-events M keys K null-keys J
// followed by one "null-event TYPE KEY" or "null-key KEY" line each, and
// exits 0 when M and J are 0, 1 otherwise.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.cache.ChildData;
import org.apache.curator.framework.recipes.cache.CuratorCache;
import org.apache.curator.framework.recipes.cache.CuratorCacheListener;
import org.apache.curator.retry.ExponentialBackoffRetry;

public class CuratorRead {

    private static final List<String> nullEvents = Collections.synchronizedList(new ArrayList<>());
    private static int events;
    private static volatile String marker;
    private static final CountDownLatch markerSeen = new CountDownLatch(1);

    // take is what upstream's listener does with an event's data.
    private static synchronized void take(String type, ChildData data) {
        events++;
        try {
            new String(data.getData(), StandardCharsets.UTF_8);
        } catch (NullPointerException e) {
            nullEvents.add("null-event " + type + " " + data.getPath());
        }
        if (marker != null && marker.equals(data.getPath()) && !"deleted".equals(type)) {
            markerSeen.countDown();
        }
    }

    public static void main(String[] args) throws Exception {
        CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(args[0]).namespace(args[1])
                .retryPolicy(new ExponentialBackoffRetry(500, 3))
                .sessionTimeoutMs(60000).connectionTimeoutMs(10000).build();
        client.start();
        if (!client.blockUntilConnected(30, TimeUnit.SECONDS)) {
            System.err.println("no connection to " + args[0]);
            System.exit(2);
        }
        CountDownLatch initialized = new CountDownLatch(1);
        CuratorCache cache = CuratorCache.build(client, "/");
        cache.listenable().addListener(CuratorCacheListener.builder()
                .forCreates(data -> take("created", data))
                .forChanges((oldData, data) -> take("changed", data))
                .forDeletes(oldData -> take("deleted", oldData))
                .forInitialized(initialized::countDown)
                .afterInitialized()
                .build());
        cache.start();
        if (!initialized.await(30, TimeUnit.SECONDS)) {
            System.err.println("cache not initialized");
            System.exit(2);
        }
        System.out.println("ready");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null && !line.startsWith("done ")) {
        }
        if (line == null) {
            System.err.println("stdin closed before done");
            System.exit(2);
        }
        // The cache sees a namespace path; the marker is a key of the namespace.
        marker = line.substring("done ".length()).trim();
        if (cache.get(marker).isPresent()) {
            markerSeen.countDown();
        }
        if (!markerSeen.await(30, TimeUnit.SECONDS)) {
            System.err.println("no event for " + marker + " within 30s");
            System.exit(2);
        }
        List<String> nullKeys = new ArrayList<>();
        int keys = walk(client, "/", nullKeys);
        cache.close();
        client.close();
        int eventCount;
        List<String> lost;
        synchronized (CuratorRead.class) {
            eventCount = events;
            lost = new ArrayList<>(nullEvents);
        }
        System.out.println("events " + eventCount + " null-events " + lost.size() + " keys " + keys + " null-keys " + nullKeys.size());
        for (String s : lost) {
            System.out.println(s);
        }
        for (String s : nullKeys) {
            System.out.println("null-key " + s);
        }
        System.exit(lost.isEmpty() && nullKeys.isEmpty() ? 0 : 1);
    }

    // walk reads every key below path (path itself too, except the
    // namespace root) as upstream's query does and returns how many.
    private static int walk(CuratorFramework client, String path, List<String> nullKeys) throws Exception {
        int n = 0;
        if (!"/".equals(path)) {
            n++;
            try {
                new String(client.getData().forPath(path), StandardCharsets.UTF_8);
            } catch (NullPointerException e) {
                nullKeys.add(path);
            } catch (org.apache.zookeeper.KeeperException.NoNodeException e) {
                return 0; // deleted meanwhile (an ephemeral of a node that left)
            }
        }
        List<String> children;
        try {
            children = client.getChildren().forPath(path);
        } catch (org.apache.zookeeper.KeeperException.NoNodeException e) {
            return n;
        }
        Collections.sort(children);
        for (String c : children) {
            n += walk(client, "/".equals(path) ? "/" + c : path + "/" + c, nullKeys);
        }
        return n;
    }
}
