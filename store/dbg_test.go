package store

import (
	"context"
	"fmt"
	"sync"
	"testing"
)

func TestDbgRounds(t *testing.T) {
	r := newTestRun(t, Policy{})
	st := r.Events()
	var wg sync.WaitGroup
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 300; i++ {
				st.Append(context.Background(), AnyRev, NewEvent{Type: "t", Data: benchData(i)})
			}
		}()
	}
	wg.Wait()
	fmt.Println(len(dbgRounds), dbgRounds[:60])
}
