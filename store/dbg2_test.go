package store

import (
	"testing"
	"time"
)

func BenchmarkDbgPrepare(b *testing.B) {
	pol, _ := compilePolicy(Policy{})
	s := &Stream{pol: pol}
	for i := 0; b.Loop(); i++ {
		s.prepare([]NewEvent{{Type: "graph:node-completed", Data: benchData(i)}})
	}
}
func BenchmarkDbgEncode(b *testing.B) {
	c := mustCanon(b, benchData(1))
	var buf []byte
	for i := 0; b.Loop(); i++ {
		buf, _ = encodeLine(buf[:0], 5, 5, "0b7e2c4e-8a53-4e0c-9f5e-2b8d6f1a9c3d", "graph:node-completed", time.Now(), c, digestString([32]byte{1}))
	}
}
