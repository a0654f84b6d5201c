package sdk_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/obversa/obversa/sdk"
)

func ExampleFail() {
	err := sdk.Fail(sdk.FailureRateLimit, "provider said %d", 429)
	var f *sdk.Failure
	if errors.As(err, &f) {
		fmt.Println(f.Kind, "-", f.Message)
	}
	// Output: rate_limit - provider said 429
}

func ExampleServeEngine() {
	// In a plugin's main function; echoEngine implements sdk.Engine.
	if err := sdk.ServeEngine(echoEngine{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func ExampleServe() {
	// One binary serving an engine and a node binding.
	if err := sdk.Serve(sdk.WithEngine(echoEngine{}), sdk.WithNode(echoNode{}), sdk.WithLogger(sdk.Logger("my-plugin"))); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func ExampleServePolicy() {
	// In a plugin's main function; guard implements sdk.Policy (see
	// examples/plugins/guard for a whole one).
	if err := sdk.ServePolicy(guard{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// guard waits for a person before any prompt that mentions a push.
type guard struct{}

func (guard) Describe(context.Context) (*sdk.Description, error) {
	return &sdk.Description{Name: "guard", Version: "1", Types: []sdk.Type{sdk.TypePolicy}}, nil
}

func (guard) Configure(context.Context, json.RawMessage) ([]sdk.Diagnostic, error) { return nil, nil }

func (guard) Decide(_ context.Context, req sdk.DecideRequest) (*sdk.Decision, error) {
	if strings.Contains(req.Prompt, "push") {
		return &sdk.Decision{Verdict: sdk.VerdictWait, Reason: "a push needs a person"}, nil
	}
	return &sdk.Decision{Verdict: sdk.VerdictAllow}, nil
}
