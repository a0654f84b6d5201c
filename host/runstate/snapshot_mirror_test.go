package runstate

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/plan"
	"github.com/obversa/obversa/host/snapcodec"
	"github.com/obversa/obversa/plugin"
)

// TestSnapshotStartMirrorsEveryField guards the fold snapshot's mirror of
// the definition (defSnap, nodeSnap, forEachSnap, itemSnap, loopSnap),
// which names each field of graph.Definition and the types under it by
// hand: a definition whose every exported field, at every depth, holds a
// value other than its zero comes back from the snapshot exactly. A field
// added to those types without the mirror would come back zero, and a
// snapshot's restore and its check against the record (both through the
// mirror) would not see it, so this test fails until the mirror carries
// it; a field of a kind fill cannot set fails it too.
func TestSnapshotStartMirrorsEveryField(t *testing.T) {
	var base plan.RunStarted
	if err := json.Unmarshal(started(t), &base); err != nil {
		t.Fatal(err)
	}
	f := &filler{seen: map[string]bool{}}
	def := &graph.Definition{}
	if err := f.fill(reflect.ValueOf(def).Elem(), "Definition", 0); err != nil {
		t.Fatal(err)
	}
	// Every type the definition holds was reached, so each of its
	// fields holds a value.
	for _, typ := range []any{graph.Definition{}, graph.KeyLimit{}, graph.NodeDef{}, graph.ForEachDef{}, graph.ForEachItem{}, graph.LoopDef{}} {
		if name := reflect.TypeOf(typ).String(); !f.seen[name] {
			t.Errorf("fill never reached %s", name)
		}
	}
	rs := base
	rs.Definition = def
	got := roundTripStart(t, &rs)
	if d := cmp.Diff(def, got.Definition); d != "" {
		t.Errorf("definition restored from the snapshot's mirror (-recorded +restored):\n%s\nextend host/runstate/snapshot_start.go with the field", d)
	}
}

// TestSnapshotPositionMirrorsEveryField does for the positions what
// TestSnapshotStartMirrorsEveryField does for the definition: a Position
// whose every exported field, its calls', their usage's and parts
// artifact's included, holds a value other than its zero comes back from
// the snapshot exactly, so a field added to those types without
// host/runstate/snapshot_positions.go fails it.
func TestSnapshotPositionMirrorsEveryField(t *testing.T) {
	f := &filler{seen: map[string]bool{}}
	var p Position
	if err := f.fill(reflect.ValueOf(&p).Elem(), "Position", 0); err != nil {
		t.Fatal(err)
	}
	for _, typ := range []any{Position{}, EngineCall{}, plugin.Usage{}, graph.ArtifactRef{}} {
		if name := reflect.TypeOf(typ).String(); !f.seen[name] {
			t.Errorf("fill never reached %s", name)
		}
	}
	p.DispatchedAt = time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	p.StartedAt = p.DispatchedAt.Add(time.Second)
	p.SettledAt = p.StartedAt.Add(time.Second)
	s := New()
	s.pos["dag/a/1"] = &p
	back := New()
	codecRoundTrip(t, func(w *snapcodec.Writer) error { s.encodePositions(w); return nil },
		func(r *snapcodec.Reader) error { return decodePositions(r, back) })
	if d := cmp.Diff(s.pos, back.pos); d != "" {
		t.Errorf("position restored from the snapshot (-folded +restored):\n%s\nextend host/runstate/snapshot_positions.go with the field", d)
	}
}

// filler sets every exported field of a value to one other than its
// zero, each different (n counts them), and notes the struct types it
// reached.
type filler struct {
	n    int
	seen map[string]bool
}

// maxDepth bounds how deep fill goes into types that hold themselves (a
// loop's members are nodes): nested once more than the top, then a
// pointer is left nil and a list empty but set.
const maxDepth = 2

// fill sets v, named path, at nesting depth. It fails for a kind it
// cannot set, so that a new field of such a kind is not left zero
// unseen.
func (f *filler) fill(v reflect.Value, path string, depth int) error {
	f.n++
	switch v.Kind() {
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d", f.n))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(f.n))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(f.n))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(f.n) + 0.5)
	case reflect.Pointer:
		if depth > maxDepth {
			return nil
		}
		p := reflect.New(v.Type().Elem())
		if err := f.fill(p.Elem(), path, depth+1); err != nil {
			return err
		}
		v.Set(p)
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			// A byte list is JSON here (json.RawMessage).
			v.SetBytes(fmt.Appendf(nil, `{"v":%d}`, f.n))
			return nil
		}
		n := 2
		if depth > maxDepth {
			n = 0
		}
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			if err := f.fill(s.Index(i), fmt.Sprintf("%s[%d]", path, i), depth+1); err != nil {
				return err
			}
		}
		v.Set(s)
	case reflect.Map:
		if depth > maxDepth {
			v.Set(reflect.MakeMap(v.Type()))
			return nil
		}
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		if err := f.fill(k, path+" key", depth+1); err != nil {
			return err
		}
		if err := f.fill(e, path+" value", depth+1); err != nil {
			return err
		}
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Struct:
		f.seen[v.Type().String()] = true
		for i := range v.NumField() {
			if sf := v.Type().Field(i); sf.IsExported() {
				if err := f.fill(v.Field(i), path+"."+sf.Name, depth); err != nil {
					return err
				}
			}
		}
	default:
		return fmt.Errorf("%s: fill cannot set a %s; teach it to, and the snapshot's mirror to keep it", path, v.Type())
	}
	return nil
}
