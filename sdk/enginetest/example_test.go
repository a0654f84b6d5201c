package enginetest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/sdk/enginetest"
)

func ExampleNew() {
	e := enginetest.New()
	res, err := e.Run(context.Background(), plugin.RunRequest{Prompt: "Write a haiku"}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	final, _ := res.Final()
	fmt.Println(final.Text, res.Usage.Known)
	// Output: mock answer to: "Write a haiku" true
}

func ExampleEngine_Configure() {
	e := enginetest.New()
	diags, _ := e.Configure(context.Background(), json.RawMessage(`{"responses": [
		{"node": "flaky", "calls": [1], "fail": {"kind": "transient", "message": "try again"}},
		{"node": "flaky", "text": "ok now"}
	]}`))
	fmt.Println(len(diags))
	for range 2 {
		res, err := e.Run(context.Background(), plugin.RunRequest{NodeID: "flaky"}, nil)
		var f *plugin.Failure
		if errors.As(err, &f) {
			fmt.Println(f.Kind, f.Message)
			continue
		}
		final, _ := res.Final()
		fmt.Println(final.Text)
	}
	// Output:
	// 0
	// transient try again
	// ok now
}
