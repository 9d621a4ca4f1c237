// ProcessListLoad loads and writes ShardingSphere's process list with
// SnakeYAML, the parser ShardingSphere uses, into mirrors of its
// YamlProcessList and YamlProcess (infra/executor .../process/yaml),
// property for property, so that a property upstream does not have fails
// the load as it does upstream.
//
//   java ProcessListLoad load FILE   prints each process's properties
//   java ProcessListLoad dump        prints a one-process list as
//                                    YamlEngine.marshal writes it (dumpAsMap)
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.Collection;
import java.util.LinkedList;

import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.Constructor;

public class ProcessListLoad {

    public static class YamlProcess {
        private String id;
        private Long startMillis;
        private String sql;
        private String databaseName;
        private String username;
        private String hostname;
        private int totalUnitCount;
        private int completedUnitCount;
        private boolean idle;
        private boolean interrupted;

        public String getId() { return id; }
        public void setId(String v) { id = v; }
        public Long getStartMillis() { return startMillis; }
        public void setStartMillis(Long v) { startMillis = v; }
        public String getSql() { return sql; }
        public void setSql(String v) { sql = v; }
        public String getDatabaseName() { return databaseName; }
        public void setDatabaseName(String v) { databaseName = v; }
        public String getUsername() { return username; }
        public void setUsername(String v) { username = v; }
        public String getHostname() { return hostname; }
        public void setHostname(String v) { hostname = v; }
        public int getTotalUnitCount() { return totalUnitCount; }
        public void setTotalUnitCount(int v) { totalUnitCount = v; }
        public int getCompletedUnitCount() { return completedUnitCount; }
        public void setCompletedUnitCount(int v) { completedUnitCount = v; }
        public boolean isIdle() { return idle; }
        public void setIdle(boolean v) { idle = v; }
        public boolean isInterrupted() { return interrupted; }
        public void setInterrupted(boolean v) { interrupted = v; }
    }

    public static class YamlProcessList {
        private Collection<YamlProcess> processes = new LinkedList<>();

        public Collection<YamlProcess> getProcesses() { return processes; }
        public void setProcesses(Collection<YamlProcess> v) { processes = v; }
    }

    public static void main(String[] args) throws Exception {
        if (args[0].equals("dump")) {
            YamlProcess p = new YamlProcess();
            p.setId("p1");
            p.setStartMillis(1700000000000L);
            p.setSql("SELECT 1");
            p.setDatabaseName("sharding_db");
            p.setUsername("root");
            p.setHostname("127.0.0.1");
            p.setTotalUnitCount(2);
            p.setCompletedUnitCount(1);
            p.setIdle(true);
            YamlProcessList l = new YamlProcessList();
            l.getProcesses().add(p);
            System.out.print(new Yaml().dumpAsMap(l));
            return;
        }
        String content = new String(Files.readAllBytes(Paths.get(args[1])), "UTF-8");
        YamlProcessList l = new Yaml(new Constructor(YamlProcessList.class, new LoaderOptions())).load(content);
        for (YamlProcess p : l.getProcesses()) {
            System.out.println(p.getId() + "|" + p.getStartMillis() + "|" + p.getSql() + "|" + p.getDatabaseName() + "|" + p.getUsername()
                    + "|" + p.getHostname() + "|" + p.getTotalUnitCount() + "|" + p.getCompletedUnitCount() + "|" + p.isIdle() + "|" + p.isInterrupted());
        }
    }
}
