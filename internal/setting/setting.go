// Package setting fills in the defaults of configuration structs, whose
// zero value means "the default". Every package fills its options with
// Default, so that one rule says which value is unset.
package setting

import "reflect"

// Default sets *v to def when *v is unset: its zero value (0, "", nil, a
// zero struct), an empty slice, or a negative number. An option whose
// negative value means something of its own (none, off) is checked for it
// before Default runs.
func Default[T any](v *T, def T) {
	if unset(reflect.ValueOf(v).Elem()) {
		*v = def
	}
}

func unset(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() <= 0
	case reflect.Float32, reflect.Float64:
		return v.Float() <= 0
	case reflect.Slice, reflect.Map:
		return v.Len() == 0
	}
	return v.IsZero()
}
