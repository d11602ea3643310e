package checker

import (
	"reflect"
	"testing"
)

func TestContested(t *testing.T) {
	h := func(p int, from, to int64) Hold { return Hold{Process: p, From: from, To: to} }
	cases := []struct {
		name string
		in   []Hold
		want []Hold
	}{
		{"one after another", []Hold{h(0, 0, 10), h(1, 10, 20), h(0, 20, 30)}, nil},
		{"same client twice", []Hold{h(0, 0, 10), h(0, 5, 20)}, nil},
		{"paused holder", []Hold{h(0, 0, 100), h(1, 40, 50), h(2, 60, 70)},
			[]Hold{h(0, 40, 50), h(0, 60, 70), h(1, 40, 50), h(2, 60, 70)}},
		{"overlapping others merge", []Hold{h(0, 0, 100), h(1, 10, 50), h(2, 40, 60)},
			[]Hold{h(0, 10, 60), h(1, 10, 50), h(2, 40, 60)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Contested(tc.in); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Contested(%v) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}
