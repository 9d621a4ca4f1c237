import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;

/**
 * JdbcCatalog browses a database through JDBC's DatabaseMetaData, the way
 * DBeaver, DataGrip and MySQL Workbench do: getCatalogs, getSchemas,
 * getTables, getColumns and getPrimaryKeys. It prints one line per object:
 *
 *   catalog NAME
 *   schema NAME
 *   table CATALOG SCHEMA NAME TYPE
 *   column TABLE NAME TYPE_NAME NULLABLE
 *   key TABLE COLUMN SEQ
 *
 * Usage: JdbcCatalog URL USER PASSWORD. A failing call prints its SQLState
 * and message and exits 1.
 */
public class JdbcCatalog {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.setProperty("user", args[1]);
        props.setProperty("password", args[2]);
        try (Connection conn = DriverManager.getConnection(args[0], props)) {
            DatabaseMetaData md = conn.getMetaData();
            System.out.println("product " + md.getDatabaseProductName() + " " + md.getDatabaseProductVersion());
            try (ResultSet rs = md.getCatalogs()) {
                while (rs.next()) {
                    System.out.println("catalog " + rs.getString("TABLE_CAT"));
                }
            }
            try (ResultSet rs = md.getSchemas()) {
                while (rs.next()) {
                    System.out.println("schema " + rs.getString("TABLE_SCHEM"));
                }
            }
            String catalog = conn.getCatalog();
            String schema = conn.getSchema();
            List<String> tables = new ArrayList<>();
            try (ResultSet rs = md.getTables(catalog, schema, "%", new String[] {"TABLE", "VIEW"})) {
                while (rs.next()) {
                    tables.add(rs.getString("TABLE_NAME"));
                    System.out.println("table " + rs.getString("TABLE_CAT") + " " + rs.getString("TABLE_SCHEM") + " "
                            + rs.getString("TABLE_NAME") + " " + rs.getString("TABLE_TYPE"));
                }
            }
            for (String t : tables) {
                try (ResultSet rs = md.getColumns(catalog, schema, t, "%")) {
                    while (rs.next()) {
                        System.out.println("column " + rs.getString("TABLE_NAME") + " " + rs.getString("COLUMN_NAME") + " "
                                + rs.getString("TYPE_NAME") + " " + rs.getInt("NULLABLE"));
                    }
                }
                try (ResultSet rs = md.getPrimaryKeys(catalog, schema, t)) {
                    while (rs.next()) {
                        System.out.println("key " + rs.getString("TABLE_NAME") + " " + rs.getString("COLUMN_NAME") + " " + rs.getShort("KEY_SEQ"));
                    }
                }
            }
        } catch (SQLException e) {
            System.out.println("error " + e.getSQLState() + " " + e.getMessage());
            System.exit(1);
        }
    }
}
