package cmdengine

import "github.com/obversa/obversa/plugin"

// Name is the adapter and binding name the plugin describes itself with.
const Name = "cmd"

// Version is the plugin's version.
const Version = "0.1.0"

// description is the answer to Describe for both plugin types: admit and
// structured output (in json and jsonl modes), no tool selection, no
// concurrency limit, and every failure kind (failure rules may produce
// any).
func description() *plugin.Description {
	return &plugin.Description{
		Name:    Name,
		Version: Version,
		Types:   []plugin.Type{plugin.TypeEngine, plugin.TypeNode},
		Capabilities: plugin.Capabilities{
			Admit:            true,
			StructuredOutput: true,
		},
		FailureKinds: append([]plugin.FailureKind(nil), plugin.FailureKinds...),
	}
}
