package checker

import (
	"math/rand/v2"
	"reflect"
	"sort"
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
			if got, _ := Contested(tc.in); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Contested(%v) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}

// TestContestedMatchesPairwise compares Contested with comparing every pair
// of holds, on random holds of a few clients, some long (paused holders).
func TestContestedMatchesPairwise(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	for range 200 {
		var hs []Hold
		for range rng.IntN(40) {
			from := rng.Int64N(1000)
			to := from + 1 + rng.Int64N(30)
			if rng.IntN(10) == 0 {
				to += rng.Int64N(500)
			}
			hs = append(hs, Hold{Process: rng.IntN(4), From: from, To: to})
		}
		got, of := Contested(hs)
		want, wantOf := pairwise(hs)
		if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(of, wantOf) {
			t.Fatalf("Contested(%v) = %v %v, pairwise %v %v", hs, got, of, want, wantOf)
		}
	}
}

func pairwise(hs []Hold) (pieces []Hold, of []int) {
	for i, a := range hs {
		var cuts [][2]int64
		for j, b := range hs {
			if from, to := max(a.From, b.From), min(a.To, b.To); i != j && a.Process != b.Process && from < to {
				cuts = append(cuts, [2]int64{from, to})
			}
		}
		sort.Slice(cuts, func(x, y int) bool { return cuts[x][0] < cuts[y][0] })
		for k := 0; k < len(cuts); {
			piece := a
			piece.From, piece.To = cuts[k][0], cuts[k][1]
			for k++; k < len(cuts) && cuts[k][0] <= piece.To; k++ {
				piece.To = max(piece.To, cuts[k][1])
			}
			pieces, of = append(pieces, piece), append(of, i)
		}
	}
	return pieces, of
}
