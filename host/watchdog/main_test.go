package watchdog_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/obversa/obversa/plugin"
)

// helperEnv makes the test binary a node plugin (see racePlugin).
const helperEnv = "OBVERSA_WATCHDOG_TEST_PLUGIN"

func TestMain(m *testing.M) {
	if log := os.Getenv(helperEnv); log != "" {
		os.Exit(racePlugin(log))
	}
	os.Exit(m.Run())
}

// racePlugin serves a node binding that tells which bytes it was executed
// from: the size of its own executable, appended to the file log at start
// and answered as its Describe version.
func racePlugin(log string) int {
	st, err := os.Stat("/proc/self/exe")
	if err != nil {
		return 2
	}
	size := strconv.FormatInt(st.Size(), 10)
	f, err := os.OpenFile(log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return 2
	}
	_, _ = f.WriteString(size + "\n")
	f.Close()
	if err := plugin.Serve(plugin.ServeConfig{Node: sizeNode(size)}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

type sizeNode string

func (n sizeNode) Describe(context.Context) (*plugin.Description, error) {
	return &plugin.Description{Name: "size", Version: string(n), Types: []plugin.Type{plugin.TypeNode}}, nil
}

func (sizeNode) Configure(context.Context, json.RawMessage) ([]plugin.Diagnostic, error) {
	return nil, nil
}

func (sizeNode) Invoke(context.Context, plugin.InvokeRequest) (json.RawMessage, error) {
	return json.RawMessage(`{}`), nil
}
