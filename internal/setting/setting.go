// Package setting fills in the defaults of configuration structs, whose
// zero value means "the default".
package setting

import "cmp"

// Default sets *v to def when *v is zero or negative.
func Default[T cmp.Ordered](v *T, def T) {
	var zero T
	if *v <= zero {
		*v = def
	}
}
