package hcl_test

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/obversa/obversa/hcl"
)

func ExampleDecode() {
	src := []byte(`
plugin "mock" {
  type = "engine"
  path = "bin/mock-engine"
}
plugin "shell" {
  type = "node"
  path = "bin/cmd-engine"
}
lane "writer" {
  requested = { adapter = "mock", provider = "local", model_family = "scripted", model = "m1", tools = [] }
}
graph "dag" {
  node "draft" {
    lane   = "writer"
    prompt = "Write a haiku about durable logs."
  }
  node "count" {
    binding    = "shell"
    depends_on = ["draft"]
    input      = { command = ["wc", "-c"], stdin = "${input.results.draft}" }
    retry_safe = true
  }
  node "report" {
    kind   = "finalizer"
    lane   = "writer"
    prompt = "Summarise: ${input.results.draft} (${input.results.count.stdout} bytes)"
  }
}
`)
	rf, diags := hcl.Decode(src, "/project/run.hcl")
	if diags.HasErrors() {
		fmt.Println(diags)
		return
	}
	fmt.Println("plugin path:", rf.Plugins[0].Path)
	fmt.Println("storage:", rf.Storage.Directory, rf.Storage.Namespace)
	for _, n := range rf.Graph.Nodes {
		fmt.Printf("%s %s lane=%q binding=%q deps=%v\n", n.ID, n.Kind, n.Lane, n.Binding, n.DependsOn)
	}
	fmt.Println("input:", string(rf.Graph.Nodes[1].Input))
	// Output:
	// plugin path: /project/bin/mock-engine
	// storage: /project/.obversa default
	// draft required lane="writer" binding="" deps=[]
	// count required lane="" binding="shell" deps=[draft]
	// report finalizer lane="writer" binding="" deps=[]
	// input: {"command":["wc","-c"],"stdin":"${input.results.draft}"}
}

func ExampleWriteDiagnostics() {
	src := []byte(`graph "dag" {
  node "a" {
    lane   = "writr"
    prompt = "hi"
  }
}
`)
	_, diags := hcl.Decode(src, "run.hcl")
	_ = hcl.WriteDiagnostics(os.Stdout, diags, map[string][]byte{"run.hcl": src}, 80)
	// Output:
	// run.hcl:3:14: error: Unknown lane "writr"
	//
	//   on run.hcl line 3:
	//    3:     lane   = "writr"
	//
	// Node "a" uses lane "writr", but no lane "writr" { … } block declares it. Declare
	// the lane or use a declared one.
}

func ExampleRenderPrompt() {
	results := map[string]json.RawMessage{
		"draft": json.RawMessage(`"Logs endure."`),
		"count": json.RawMessage(`{"stdout":"12"}`),
	}
	out, err := hcl.RenderPrompt("Summarise: ${input.results.draft} (${input.results.count.stdout} bytes)", results)
	fmt.Println(out, err)
	_, err = hcl.RenderPrompt("${input.results.vet.stdout}", results)
	fmt.Println(err)
	// Output:
	// Summarise: Logs endure. (12 bytes) <nil>
	// template references a node result that is not available: input.results.vet.stdout: no result was recorded for node "vet"
}

func ExampleRenderInput() {
	results := map[string]json.RawMessage{"draft": json.RawMessage(`"Logs endure."`)}
	out, err := hcl.RenderInput(json.RawMessage(`{"command":["wc","-c"],"stdin":"${input.results.draft}","home":"$${HOME}"}`), results)
	fmt.Println(string(out), err)
	// Output:
	// {"command":["wc","-c"],"home":"${HOME}","stdin":"Logs endure."} <nil>
}

func ExampleEncodeLockFile() {
	var l hcl.LockFile
	l.Set(hcl.LockedPlugin{Name: "shell", Path: "bin/cmd-engine", SHA256: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"})
	fmt.Print(string(hcl.EncodeLockFile(&l)))
	// Output:
	// # This file is maintained by "obversa plugin lock". Manual edits may be lost.
	//
	// plugin "shell" {
	//   path   = "bin/cmd-engine"
	//   sha256 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	// }
}
