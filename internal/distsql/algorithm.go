package distsql

// The algorithm and list pieces of the grammar the families' statements
// share (see kit.go).

// Algorithm is TYPE(NAME=type[, PROPERTIES(...)]).
type Algorithm struct {
	Type  string
	Props []Property
}

// names reads name (, name)*.
func (p *parser) names(what string) []string {
	out := []string{p.identifier(what)}
	for p.symbol(",") {
		out = append(out, p.identifier(what))
	}
	return out
}

// boolean reads TRUE or FALSE or fails naming what was expected.
func (p *parser) boolean(what string) bool {
	switch {
	case p.keyword("TRUE"):
		return true
	case p.keyword("FALSE"):
		return false
	}
	p.fail("%s expected (TRUE or FALSE)", what)
	return false
}

// algorithm reads TYPE(NAME=type[, PROPERTIES(...)]).
func (p *parser) algorithm() Algorithm {
	p.expect("TYPE")
	p.expectSymbol("(")
	p.expect("NAME")
	p.expectSymbol("=")
	a := Algorithm{Type: p.identOrString("algorithm type")}
	if p.symbol(",") {
		a.Props = p.properties()
	}
	p.expectSymbol(")")
	return a
}
