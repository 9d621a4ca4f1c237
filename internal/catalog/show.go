package catalog

import (
	"fmt"
	"github.com/shardkeeper/shardkeeper/internal/sqlerr"
	"strings"
)

// showMySQL answers one of MySQLShowForms: the form's relation, filtered
// by LIKE on its first column or by a WHERE over its columns.
func showMySQL(v *View, q string, variables [][2]string) (*Result, error) {
	toks, err := lexQuery(q)
	if err != nil {
		return nil, unsupportedMySQL(clip(q))
	}
	p := &qparser{toks: toks, src: q}
	var words []string
	for _, t := range toks {
		if t.kind != tWord {
			break
		}
		words = append(words, strings.ToUpper(t.text))
	}
	form, ok := mysqlShow(words[1:])
	if !ok {
		return nil, unsupportedMySQL(clip(q))
	}
	var (
		rel  *relation
		perr error
	)
	func() {
		defer func() {
			if r := recover(); r != nil {
				pe, ok := r.(parseError)
				if !ok {
					panic(r)
				}
				perr = fmt.Errorf("%s", pe.msg)
			}
		}()
		p.word("SHOW")
		rel, perr = showRelation(v, p, form, variables)
		if perr != nil || rel == nil {
			return
		}
		var filter expr
		likeCol := rel.cols[0].Name
		switch {
		case p.word("LIKE"):
			t := p.peek()
			if t.kind != tString {
				p.fail("pattern expected")
			}
			p.i++
			filter = binary{"LIKE", colRef{name: likeCol}, lit{str(t.text)}}
		case p.word("WHERE"):
			filter = p.expr(0)
		}
		for p.sym(";") {
		}
		if p.peek().kind != tEOF {
			p.fail("unexpected %q", p.peek().text)
		}
		if filter != nil {
			var kept [][]*string
			for _, row := range rel.rows {
				e := &env{rel: rel, row: row, view: v}
				ok, _, err := e.eval(filter)
				if err != nil {
					perr = err
					return
				}
				if truth(ok) {
					kept = append(kept, row)
				}
			}
			rel = &relation{cols: rel.cols, rows: kept}
		}
	}()
	if perr != nil {
		var ce *sqlerr.Error
		if e, ok := perr.(*sqlerr.Error); ok {
			ce = e
		} else {
			ce = &sqlerr.Error{Code: 1064, SQLState: "42000", Message: fmt.Sprintf("You have an error in your SQL syntax: %s in '%s'", perr, clip(q))}
		}
		return nil, ce
	}
	if len(rel.rows) > MaxRows {
		return nil, &sqlerr.Error{Code: 1235, SQLState: "42000", Message: fmt.Sprintf("more than %d rows", MaxRows)}
	}
	rows := rel.rows
	if rows == nil {
		rows = [][]*string{}
	}
	return &Result{Columns: rel.cols, Rows: rows}, nil
}

// fromDatabase reads [FROM|IN db], defaulting to the current database.
func fromDatabase(v *View, p *qparser) (string, error) {
	db := v.Current
	if p.word("FROM") || p.word("IN") {
		db = p.name()
	}
	if db == "" {
		return "", &sqlerr.Error{Code: 1046, SQLState: "3D000", Message: "No database selected"}
	}
	if !v.hasDatabase(db) {
		return "", &sqlerr.Error{Code: 1049, SQLState: "42000", Message: fmt.Sprintf("Unknown database '%s'", db)}
	}
	return db, nil
}

func (v *View) hasDatabase(db string) bool {
	for _, d := range v.Databases {
		if d.Name == db {
			return true
		}
	}
	return false
}

// tableOf reads FROM|IN [db.]t [FROM|IN db] and returns the table.
func tableOf(v *View, p *qparser) (string, Table, error) {
	if !p.word("FROM") && !p.word("IN") {
		p.fail("FROM expected")
	}
	name := p.name()
	db := ""
	if p.sym(".") {
		db, name = name, p.name()
	}
	if p.word("FROM") || p.word("IN") {
		db = p.name()
	}
	if db == "" {
		db = v.Current
	}
	if db == "" {
		return "", Table{}, &sqlerr.Error{Code: 1046, SQLState: "3D000", Message: "No database selected"}
	}
	t, ok := v.Table(db, name)
	if !ok {
		return "", Table{}, &sqlerr.Error{Code: 1146, SQLState: "42S02", Message: fmt.Sprintf("Table '%s.%s' doesn't exist", db, name)}
	}
	return db, t, nil
}

// showRelation reads the rest of SHOW form (after its words) and returns
// its rows.
func showRelation(v *View, p *qparser, form string, variables [][2]string) (*relation, error) {
	skip := func(words ...string) {
		for _, w := range words {
			p.word(w)
		}
	}
	switch form {
	case "engines":
		skip("STORAGE", "ENGINES")
		return &relation{cols: cols("Engine", "Support", "Comment", "Transactions", "XA", "Savepoints"), rows: engines}, nil
	case "charset":
		skip("CHARSET", "CHARACTER", "SET")
		return &relation{cols: cols("Charset", "Description", "Default collation", "#Maxlen"), rows: charsets}, nil
	case "collation":
		skip("COLLATION")
		return &relation{cols: cols("Collation", "Charset", "#Id", "Default", "Compiled", "#Sortlen"), rows: collations}, nil
	case "status":
		skip("SESSION", "GLOBAL", "LOCAL", "STATUS")
		r := &relation{cols: cols("Variable_name", "Value")}
		for _, s := range status {
			r.rows = append(r.rows, row(s[0], s[1]))
		}
		return r, nil
	case "variables":
		skip("SESSION", "GLOBAL", "LOCAL", "VARIABLES")
		r := &relation{cols: cols("Variable_name", "Value")}
		for _, s := range variables {
			r.rows = append(r.rows, row(s[0], s[1]))
		}
		return r, nil
	case "grants":
		skip("GRANTS")
		user := fmt.Sprintf("%s@%s", v.User, grantHost(v))
		if p.word("FOR") {
			if p.word("CURRENT_USER") {
				if p.sym("(") && !p.sym(")") {
					p.fail(") expected")
				}
			} else {
				name := p.name()
				host := "%"
				if t := p.peek(); t.kind == tWord && strings.HasPrefix(t.text, "@") {
					p.i++
					host = strings.TrimPrefix(t.text, "@")
				} else if p.sym("@") {
					host = p.name()
				}
				if name != v.User {
					return nil, &sqlerr.Error{Code: 1141, SQLState: "42000", Message: fmt.Sprintf("There is no such grant defined for user '%s' on host '%s'", name, host)}
				}
			}
		}
		r := &relation{cols: cols("Grants for " + user)}
		r.rows = append(r.rows, row(fmt.Sprintf("GRANT USAGE ON *.* TO %s", grantee(v))))
		for _, d := range v.Databases {
			r.rows = append(r.rows, row(fmt.Sprintf("GRANT ALL PRIVILEGES ON `%s`.* TO %s", d.Name, grantee(v))))
		}
		return r, nil
	case "plugins":
		skip("PLUGINS")
		return &relation{cols: cols("Name", "Status", "Type", "Library", "License"), rows: plugins}, nil
	case "table status":
		skip("TABLE", "STATUS")
		db, err := fromDatabase(v, p)
		if err != nil {
			return nil, err
		}
		r := &relation{cols: cols("Name", "Engine", "#Version", "Row_format", "#Rows", "#Avg_row_length", "#Data_length",
			"#Max_data_length", "#Index_length", "#Data_free", "#Auto_increment", "Create_time", "Update_time", "Check_time",
			"Collation", "#Checksum", "Create_options", "Comment")}
		for _, d := range v.Databases {
			if d.Name != db {
				continue
			}
			for _, t := range d.Tables {
				if t.View {
					r.rows = append(r.rows, row(t.Name, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, "VIEW"))
					continue
				}
				r.rows = append(r.rows, row(t.Name, "InnoDB", 10, "Dynamic", 0, 0, 0, 0, 0, 0, nil, nil, nil, nil, defaultCollation, nil, "", ""))
			}
		}
		return r, nil
	case "create database":
		skip("CREATE", "DATABASE", "SCHEMA")
		ifNotExists := p.word("IF")
		if ifNotExists {
			skip("NOT", "EXISTS")
		}
		db := p.name()
		if !v.hasDatabase(db) {
			return nil, &sqlerr.Error{Code: 1049, SQLState: "42000", Message: fmt.Sprintf("Unknown database '%s'", db)}
		}
		cond := ""
		if ifNotExists {
			cond = "/*!32312 IF NOT EXISTS*/ "
		}
		return &relation{cols: cols("Database", "Create Database"),
			rows: [][]*string{row(db, fmt.Sprintf("CREATE DATABASE %s`%s` /*!40100 DEFAULT CHARACTER SET %s */", cond, db, defaultCharset))}}, nil
	case "create table":
		skip("CREATE", "TABLE")
		name := p.name()
		db := v.Current
		if p.sym(".") {
			db, name = name, p.name()
		}
		t, ok := v.Table(db, name)
		if !ok {
			return nil, &sqlerr.Error{Code: 1146, SQLState: "42S02", Message: fmt.Sprintf("Table '%s.%s' doesn't exist", db, name)}
		}
		return &relation{cols: cols("Table", "Create Table"), rows: [][]*string{row(t.Name, createTable(t))}}, nil
	case "columns":
		full := p.word("FULL")
		skip("COLUMNS", "FIELDS")
		_, t, err := tableOf(v, p)
		if err != nil {
			return nil, err
		}
		r := &relation{cols: cols("Field", "Type", "Null", "Key", "Default", "Extra")}
		if full {
			r.cols = cols("Field", "Type", "Collation", "Null", "Key", "Default", "Extra", "Privileges", "Comment")
		}
		for _, c := range t.Columns {
			_, typ := dataType(c)
			key, extra := "", ""
			if c.PrimaryKey {
				key = "PRI"
			}
			if c.Generated {
				extra = "auto_increment"
			}
			if full {
				r.rows = append(r.rows, row(c.Name, typ, nil, yesNo(c.Nullable), key, nil, extra, "select,insert,update,references", ""))
			} else {
				r.rows = append(r.rows, row(c.Name, typ, yesNo(c.Nullable), key, nil, extra))
			}
		}
		return r, nil
	case "keys":
		skip("EXTENDED", "INDEX", "INDEXES", "KEYS")
		_, t, err := tableOf(v, p)
		if err != nil {
			return nil, err
		}
		r := &relation{cols: cols("Table", "#Non_unique", "Key_name", "#Seq_in_index", "Column_name", "Collation", "#Cardinality",
			"#Sub_part", "Packed", "Null", "Index_type", "Comment", "Index_comment")}
		for _, ix := range indexes(t) {
			for i, c := range ix.Columns {
				r.rows = append(r.rows, row(t.Name, nonUnique(ix), ix.Name, i+1, c, "A", 0, nil, nil, "", "BTREE", "", ""))
			}
		}
		return r, nil
	case "engine status":
		skip("ENGINE", "INNODB", "STATUS")
		return &relation{cols: cols("Type", "Name", "Status"),
			rows: [][]*string{row("InnoDB", "", "shardkeeper runs no InnoDB engine: its storage units do (ask them)")}}, nil
	case "routines":
		skip("PROCEDURE", "FUNCTION", "STATUS")
		return &relation{cols: cols("Db", "Name", "Type", "Definer", "Modified", "Created", "Security_type", "Comment",
			"character_set_client", "collation_connection", "Database Collation")}, nil
	case "triggers":
		skip("TRIGGERS")
		if _, err := fromDatabase(v, p); err != nil {
			return nil, err
		}
		return &relation{cols: cols("Trigger", "Event", "Table", "Statement", "Timing", "Created", "sql_mode", "Definer",
			"character_set_client", "collation_connection", "Database Collation")}, nil
	case "events":
		skip("EVENTS")
		if _, err := fromDatabase(v, p); err != nil {
			return nil, err
		}
		return &relation{cols: cols("Db", "Name", "Definer", "Time zone", "Type", "Execute at", "Interval value", "Interval field",
			"Starts", "Ends", "Status", "Originator", "character_set_client", "collation_connection", "Database Collation")}, nil
	case "privileges":
		skip("PRIVILEGES")
		return &relation{cols: cols("Privilege", "Context", "Comment"), rows: [][]*string{
			row("Alter", "Tables", "To alter the table"), row("Create", "Databases,Tables,Indexes", "To create new databases and tables"),
			row("Drop", "Databases,Tables", "To drop databases, tables, and views"), row("Select", "Tables", "To retrieve rows from table"),
		}}, nil
	case "open tables":
		skip("OPEN", "TABLES")
		if p.peek().kind == tWord && (isWord(p.peek(), "FROM") || isWord(p.peek(), "IN")) {
			if _, err := fromDatabase(v, p); err != nil {
				return nil, err
			}
		}
		return &relation{cols: cols("Database", "Table", "#In_use", "#Name_locked")}, nil
	case "master status":
		skip("MASTER", "BINARY", "STATUS")
		return &relation{cols: cols("File", "#Position", "Binlog_Do_DB", "Binlog_Ignore_DB", "Executed_Gtid_Set")}, nil
	case "binary logs":
		skip("MASTER", "BINARY", "LOGS")
		return &relation{cols: cols("Log_name", "#File_size")}, nil
	case "replica status":
		skip("SLAVE", "REPLICA", "STATUS", "HOSTS")
		return &relation{cols: cols("Slave_IO_State", "Master_Host", "Master_User", "#Master_Port")}, nil
	}
	return nil, unsupportedMySQL("SHOW " + form)
}

// createTable is t as MySQL's SHOW CREATE TABLE shows it, from its
// persisted columns and indexes.
func createTable(t Table) string {
	var b strings.Builder
	fmt.Fprintf(&b, "CREATE TABLE `%s` (", t.Name)
	var parts []string
	for _, c := range t.Columns {
		_, typ := dataType(c)
		s := fmt.Sprintf("`%s` %s", c.Name, typ)
		if !c.Nullable {
			s += " NOT NULL"
		}
		if c.Generated {
			s += " AUTO_INCREMENT"
		}
		parts = append(parts, s)
	}
	for _, ix := range indexes(t) {
		names := make([]string, len(ix.Columns))
		for i, c := range ix.Columns {
			names[i] = "`" + c + "`"
		}
		switch {
		case ix.Name == "PRIMARY":
			parts = append(parts, fmt.Sprintf("PRIMARY KEY (%s)", strings.Join(names, ",")))
		case ix.Unique:
			parts = append(parts, fmt.Sprintf("UNIQUE KEY `%s` (%s)", ix.Name, strings.Join(names, ",")))
		default:
			parts = append(parts, fmt.Sprintf("KEY `%s` (%s)", ix.Name, strings.Join(names, ",")))
		}
	}
	for i, s := range parts {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString("\n  " + s)
	}
	fmt.Fprintf(&b, "\n) ENGINE=InnoDB DEFAULT CHARSET=%s", defaultCharset)
	return b.String()
}
