package sdk_test

import (
	"errors"
	"fmt"
	"os"

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
