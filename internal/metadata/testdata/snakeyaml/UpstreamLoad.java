// UpstreamLoad loads registry values with SnakeYAML into classes that mirror
// Apache ShardingSphere's YAML classes field for field, the way upstream's
// YamlEngine.unmarshal does (a Constructor bound to the target class), so
// that a property upstream's class does not have fails as it fails there:
// "Cannot create property=...".
//
// Usage: java -cp snakeyaml.jar:. UpstreamLoad MANIFEST
// MANIFEST has one line per value: CLASS <tab> FILE <tab> KEY. CLASS is the
// simple name of a nested class below (V554.Name for a class of the 5.5.4
// release), or Map, List or Properties. It prints one line per value that
// fails and exits 1 if any did.
//
// The nested classes are named after the upstream classes they mirror
// (apache/shardingsphere 5.5.2 and 5.5.3, whose YAML classes are the same;
// the package is in each comment). V554 holds the classes 5.5.4 (master,
// 5.5.4-SNAPSHOT) changed. As upstream's ShardingSphereYamlConstructor
// does (NoneShardingStrategyConfigurationYamlConstruct), a none strategy
// is built from whatever node holds it: upstream writes it as none: ''.

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.AbstractConstruct;
import org.yaml.snakeyaml.constructor.Construct;
import org.yaml.snakeyaml.constructor.Constructor;
import org.yaml.snakeyaml.nodes.Node;

public final class UpstreamLoad {

    // infra.yaml.schema.pojo
    public static class YamlShardingSphereTable {
        public String name;
        public Map<String, YamlShardingSphereColumn> columns;
        public Map<String, YamlShardingSphereIndex> indexes;
        public Map<String, YamlShardingSphereConstraint> constraints;
        public TableType type;
    }

    // infra.database.core.metadata.database.enums
    public enum TableType { TABLE, VIEW, SYSTEM_TABLE, SYSTEM_VIEW }

    public static class YamlShardingSphereColumn {
        public String name;
        public int dataType;
        public boolean primaryKey;
        public boolean generated;
        public boolean caseSensitive;
        public boolean visible;
        public boolean unsigned;
        public boolean nullable;
    }

    public static class YamlShardingSphereIndex {
        public String name;
        public List<String> columns;
        public boolean unique;
    }

    public static class YamlShardingSphereConstraint {
        public String name;
        public String referencedTableName;
    }

    public static class YamlShardingSphereView {
        public String name;
        public String viewDefinition;
    }

    // infra.algorithm.core.yaml
    public static class YamlAlgorithmConfiguration {
        public String type;
        public Properties props;
    }

    // sharding.yaml.config.strategy.sharding
    public static class YamlShardingStrategyConfiguration {
        public YamlStandardShardingStrategyConfiguration standard;
        public YamlComplexShardingStrategyConfiguration complex;
        public YamlHintShardingStrategyConfiguration hint;
        public YamlNoneShardingStrategyConfiguration none;
    }

    public static class YamlStandardShardingStrategyConfiguration {
        public String shardingColumn;
        public String shardingAlgorithmName;
    }

    public static class YamlComplexShardingStrategyConfiguration {
        public String shardingColumns;
        public String shardingAlgorithmName;
    }

    public static class YamlHintShardingStrategyConfiguration {
        public String shardingAlgorithmName;
    }

    public static class YamlNoneShardingStrategyConfiguration {
    }

    // sharding.yaml.config.strategy.keygen
    public static class YamlKeyGenerateStrategyConfiguration {
        public String column;
        public String keyGeneratorName;
    }

    // sharding.yaml.config.strategy.audit
    public static class YamlShardingAuditStrategyConfiguration {
        public Collection<String> auditorNames;
        public boolean allowHintDisable = true;
    }

    // sharding.yaml.config.rule
    public static class YamlTableRuleConfiguration {
        public String logicTable;
        public String actualDataNodes;
        public YamlShardingStrategyConfiguration databaseStrategy;
        public YamlShardingStrategyConfiguration tableStrategy;
        public YamlKeyGenerateStrategyConfiguration keyGenerateStrategy;
        public YamlShardingAuditStrategyConfiguration auditStrategy;
    }

    public static class YamlShardingAutoTableRuleConfiguration {
        public String logicTable;
        public String actualDataSources;
        public YamlShardingStrategyConfiguration shardingStrategy;
        public YamlKeyGenerateStrategyConfiguration keyGenerateStrategy;
        public YamlShardingAuditStrategyConfiguration auditStrategy;
    }

    // sharding.yaml.config.cache
    public static class YamlShardingCacheConfiguration {
        public int allowedMaxSqlLength;
        public YamlShardingCacheOptionsConfiguration routeCache;
    }

    public static class YamlShardingCacheOptionsConfiguration {
        public boolean softValues;
        public int initialCapacity;
        public int maximumSize;
    }

    // The 5.5.4 classes that differ: tables without keyGenerateStrategy,
    // rule-level key generate strategies (sharding.yaml.config.rule and
    // .strategy.keygen); YamlShardingCacheConfiguration is gone.
    public static class V554 {

        public static class YamlTableRuleConfiguration {
            public String logicTable;
            public String actualDataNodes;
            public YamlShardingStrategyConfiguration databaseStrategy;
            public YamlShardingStrategyConfiguration tableStrategy;
            public YamlShardingAuditStrategyConfiguration auditStrategy;
        }

        public static class YamlShardingAutoTableRuleConfiguration {
            public String logicTable;
            public String actualDataSources;
            public YamlShardingStrategyConfiguration shardingStrategy;
            public YamlShardingAuditStrategyConfiguration auditStrategy;
        }

        public static class YamlKeyGenerateStrategyRuleConfiguration {
            public String keyGenerateType;
            public String keyGeneratorName;
            public String logicTable;
            public String keyGenerateColumn;
            public String keyGenerateSequence;
        }
    }

    // readwritesplitting.yaml.config.rule
    public static class YamlReadwriteSplittingDataSourceGroupRuleConfiguration {
        public String writeDataSourceName;
        public List<String> readDataSourceNames;
        public String transactionalReadQueryStrategy;
        public String loadBalancerName;
    }

    // encrypt.yaml.config.rule
    public static class YamlEncryptTableRuleConfiguration {
        public String name;
        public Map<String, YamlEncryptColumnRuleConfiguration> columns;
    }

    public static class YamlEncryptColumnRuleConfiguration {
        public String name;
        public YamlEncryptColumnItemRuleConfiguration cipher;
        public YamlEncryptColumnItemRuleConfiguration assistedQuery;
        public YamlEncryptColumnItemRuleConfiguration likeQuery;
    }

    public static class YamlEncryptColumnItemRuleConfiguration {
        public String name;
        public String encryptorName;
    }

    // mask.yaml.config.rule
    public static class YamlMaskTableRuleConfiguration {
        public String name;
        public Map<String, YamlMaskColumnRuleConfiguration> columns;
    }

    public static class YamlMaskColumnRuleConfiguration {
        public String logicColumn;
        public String maskAlgorithm;
    }

    // shadow.yaml.config.datasource and .table
    public static class YamlShadowDataSourceConfiguration {
        public String productionDataSourceName;
        public String shadowDataSourceName;
    }

    public static class YamlShadowTableConfiguration {
        public Collection<String> dataSourceNames;
        public Collection<String> shadowAlgorithmNames;
    }

    // authority.yaml.config and infra.yaml.config.pojo.rule (YamlUserConfiguration)
    public static class YamlAuthorityRuleConfiguration {
        public Collection<YamlUserConfiguration> users;
        public YamlAlgorithmConfiguration privilege;
        public Map<String, YamlAlgorithmConfiguration> authenticators;
        public String defaultAuthenticator;
    }

    public static class YamlUserConfiguration {
        public String user;
        public String password;
        public String authenticationMethodName;
        public boolean admin;
    }

    // transaction.yaml.config
    public static class YamlTransactionRuleConfiguration {
        public String defaultType;
        public String providerType;
        public Properties props;
    }

    // parser.yaml.config
    public static class YamlSQLParserRuleConfiguration {
        public YamlSQLParserCacheOptionRuleConfiguration sqlStatementCache;
        public YamlSQLParserCacheOptionRuleConfiguration parseTreeCache;
    }

    public static class YamlSQLParserCacheOptionRuleConfiguration {
        public int initialCapacity;
        public long maximumSize;
    }

    // sqlfederation.yaml.config
    public static class YamlSQLFederationRuleConfiguration {
        public boolean sqlFederationEnabled;
        public boolean allQueryUseSQLFederation;
        public YamlSQLFederationExecutionPlanCacheRuleConfiguration executionPlanCache;
    }

    public static class YamlSQLFederationExecutionPlanCacheRuleConfiguration {
        public int initialCapacity;
        public long maximumSize;
    }

    // sqltranslator.yaml.config
    public static class YamlSQLTranslatorRuleConfiguration {
        public String type;
        public boolean useOriginalSQLWhenTranslatingFailed;
        public Properties props;
    }

    // globalclock.yaml.config
    public static class YamlGlobalClockRuleConfiguration {
        public String type;
        public String provider;
        public boolean enabled;
        public Properties props;
    }

    // UpstreamConstructor binds the document to its class as upstream's
    // ShardingSphereYamlConstructor does, with its none strategy construct.
    static final class UpstreamConstructor extends Constructor {

        UpstreamConstructor(Class<?> root) {
            super(root, new LoaderOptions());
        }

        @Override
        protected Construct getConstructor(Node node) {
            if (node.getType() == YamlNoneShardingStrategyConfiguration.class) {
                return new AbstractConstruct() {
                    @Override
                    public Object construct(Node n) {
                        return new YamlNoneShardingStrategyConfiguration();
                    }
                };
            }
            return super.getConstructor(node);
        }
    }

    private static Class<?> classOf(String name) throws ClassNotFoundException {
        switch (name) {
            case "Map":
                return Map.class;
            case "List":
                return List.class;
            case "Properties":
                return Properties.class;
            default:
                return Class.forName(UpstreamLoad.class.getName() + "$" + name.replace('.', '$'));
        }
    }

    public static void main(String[] args) throws Exception {
        Path manifest = Paths.get(args[0]);
        int failed = 0;
        int loaded = 0;
        for (String line : Files.readAllLines(manifest, StandardCharsets.UTF_8)) {
            if (line.isEmpty()) {
                continue;
            }
            String[] f = line.split("\t", 3);
            String content = new String(Files.readAllBytes(manifest.resolveSibling(f[1])), StandardCharsets.UTF_8);
            try {
                Object v = new Yaml(new UpstreamConstructor(classOf(f[0]))).load(content);
                if (null == v) {
                    throw new IllegalStateException("empty document");
                }
                loaded++;
            } catch (Exception e) {
                failed++;
                System.out.println(f[2] + "\t" + f[0] + "\t" + e.toString().replace('\n', ' '));
            }
        }
        System.out.println("loaded " + loaded + ", failed " + failed);
        System.exit(failed > 0 ? 1 : 0);
    }
}
