package rule

// Edits are the named entries of a rule (the entries of its map fields:
// tables, algorithms, ...) that a change added, replaced or removed, as
// the change reports them. A change that reports every such entry and
// then calls Complete lets its caller find what differs from the rule
// read by comparing those entries only, instead of every entry of the
// rule (metadata.DiffOfEdits); an entry reported that did not change
// costs a comparison and nothing else. A change that does not call
// Complete is compared entry by entry. A nil *Edits records nothing. Not
// safe for concurrent use.
type Edits struct {
	entries  map[[2]string]bool
	complete bool
}

// NewEdits returns Edits that record nothing yet.
func NewEdits() *Edits {
	return &Edits{entries: map[[2]string]bool{}}
}

// Touch reports entry name of field section as possibly added, replaced
// or removed.
func (e *Edits) Touch(section, name string) {
	if e != nil {
		e.entries[[2]string{section, name}] = true
	}
}

// Complete declares that every named entry the change added, replaced or
// removed is reported.
func (e *Edits) Complete() {
	if e != nil {
		e.complete = true
	}
}

// Entries returns the entries reported, by field and name (not to be
// modified), and whether the change declared them complete.
func (e *Edits) Entries() (map[[2]string]bool, bool) {
	if e == nil {
		return nil, false
	}
	return e.entries, e.complete
}
