package workspace

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// benchTree is ~2 000 small files (100–1 100 bytes) in 40 directories.
func benchTree() map[string]file {
	files := make(map[string]file, 2000)
	for i := range 2000 {
		files[fmt.Sprintf("pkg%02d/file%04d.go", i%40, i)] = file{Content: strings.Repeat("x", 100+i%1000)}
	}
	return files
}

func BenchmarkTakeFiles(b *testing.B) {
	root := b.TempDir()
	writeTree(b, root, benchTree())
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		s, err := Take(ctx, root, ProviderFiles, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if s.Files != 2000 {
			b.Fatalf("Files = %d, want 2000", s.Files)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/2000, "µs/file")
}

func BenchmarkTakeGit(b *testing.B) {
	root := gitRepo(b, benchTree())
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		s, err := Take(ctx, root, ProviderGit, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if s.Files != 2000 {
			b.Fatalf("Files = %d, want 2000", s.Files)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/2000, "µs/file")
}
