package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"gopkg.in/yaml.v3"
)

// table is rows under ShardingSphere's column names (lower case, as
// DistSQL's result sets name them).
type table struct {
	header []string
	rows   [][]string
}

// section is one titled table of a multi-part view (databases show).
type section struct {
	title string
	table table
}

// printTable writes t aligned in columns, kubectl style; an empty table
// prints its header and nothing else.
func printTable(w io.Writer, t table) error {
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	fmt.Fprintln(tw, strings.Join(t.header, "\t"))
	for _, r := range t.rows {
		cells := make([]string, len(r))
		for i, c := range r {
			cells[i] = cell(c)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

// cell keeps one value on one line and never empty (tabwriter would
// shift the columns).
func cell(s string) string {
	s = strings.NewReplacer("\t", " ", "\n", " ", "\r", " ").Replace(s)
	if s == "" {
		return "<none>"
	}
	return s
}

// printObject writes v as indented JSON or as YAML with the same field
// names (v goes through JSON first, so the json tags name the YAML keys).
func printObject(w io.Writer, format string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if format == "json" {
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	var generic any
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	if err := dec.Decode(&generic); err != nil {
		return err
	}
	out, err := yaml.Marshal(yamlNumbers(generic))
	if err != nil {
		return err
	}
	_, err = w.Write(out)
	return err
}

// yamlNumbers turns json.Number into int64 or float64 so YAML prints
// them as plain numbers.
func yamlNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = yamlNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = yamlNumbers(e)
		}
	}
	return v
}

// output prints v as a table (t) or as JSON/YAML (v), per format.
func output(w io.Writer, format string, t table, v any) error {
	if format == "table" {
		return printTable(w, t)
	}
	return printObject(w, format, v)
}

// outputSections prints titled tables, or v as JSON/YAML.
func outputSections(w io.Writer, format string, sections []section, v any) error {
	if format != "table" {
		return printObject(w, format, v)
	}
	for i, s := range sections {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if s.title != "" {
			fmt.Fprintln(w, s.title)
		}
		if err := printTable(w, s.table); err != nil {
			return err
		}
	}
	return nil
}
