// A mirror of ShardingSphere's YamlQualifiedDataSourceState
// (infra/common, org.apache.shardingsphere.infra.state.datasource.qualified.yaml),
// dumped as ShardingSphere's YamlEngine.marshal dumps it (SnakeYAML
// dumpAsMap) and loaded as its handlers load it (loadAs, failing on an
// unknown property).
//
//   dump STATE   prints the value ShardingSphere writes for STATE
//   load FILE    prints the state FILE holds
import java.nio.file.Files;
import java.nio.file.Paths;

import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.Constructor;

public class QualifiedDataSourceStateYaml {

    public static class YamlQualifiedDataSourceState {
        private String state;

        public String getState() { return state; }
        public void setState(String v) { state = v; }
    }

    public static void main(String[] args) throws Exception {
        if (args[0].equals("dump")) {
            YamlQualifiedDataSourceState s = new YamlQualifiedDataSourceState();
            s.setState(args[1]);
            System.out.print(new Yaml().dumpAsMap(s));
            return;
        }
        String content = new String(Files.readAllBytes(Paths.get(args[1])), "UTF-8");
        YamlQualifiedDataSourceState s = new Yaml(new Constructor(YamlQualifiedDataSourceState.class, new LoaderOptions())).load(content);
        System.out.println(s.getState());
    }
}
