package graph

import (
	"errors"
	"testing"
)

func TestDefinitionValidate(t *testing.T) {
	tests := []struct {
		name string
		def  Definition
	}{
		{"cycle", Definition{GlobalConcurrency: 1, Nodes: []NodeDef{node("a", KindRequired, "b"), node("b", KindRequired, "a")}}},
		{"self edge", Definition{GlobalConcurrency: 1, Nodes: []NodeDef{node("a", KindRequired, "a")}}},
		{"unknown dependency", Definition{GlobalConcurrency: 1, Nodes: []NodeDef{node("a", KindRequired, "x")}}},
		{"finalizer with edges", Definition{GlobalConcurrency: 1, Nodes: []NodeDef{node("a", KindRequired), node("f", KindFinalizer, "a")}}},
		{"depends on finalizer", Definition{GlobalConcurrency: 1, Nodes: []NodeDef{node("f", KindFinalizer), node("a", KindRequired, "f")}}},
		{"duplicate", Definition{GlobalConcurrency: 1, Nodes: []NodeDef{node("a", KindRequired), node("a", KindRequired)}}},
		{"key without limit", Definition{GlobalConcurrency: 1, Nodes: []NodeDef{{ID: "a", Kind: KindRequired, Binding: "b", Key: "k"}}}},
		{"zero concurrency", Definition{Nodes: []NodeDef{node("a", KindRequired)}}},
		{"lane and binding", Definition{GlobalConcurrency: 1, Nodes: []NodeDef{{ID: "a", Kind: KindRequired, Binding: "b", Lane: "l"}}}},
		{"bad kind", Definition{GlobalConcurrency: 1, Nodes: []NodeDef{node("a", "sometimes")}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.def.Validate(); !errors.Is(err, ErrInvalidDefinition) {
				t.Fatalf("Validate = %v, want ErrInvalidDefinition", err)
			}
		})
	}
}
