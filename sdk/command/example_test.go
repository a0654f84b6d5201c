package command_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/obversa/obversa/sdk/command"
)

func ExampleRun() {
	res, err := command.Run(context.Background(), command.Request{
		Argv:           []string{"sh", "-c", `read name; echo "hello, $name"; exit 3`},
		InheritEnv:     []string{"PATH"},
		Stdin:          []byte("world\n"),
		Timeout:        10 * time.Second,
		MaxOutputBytes: 1 << 20,
	})
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Printf("exit %d: %s", res.ExitCode, res.Stdout)
	// Output: exit 3: hello, world
}

func ExampleRun_outputLimit() {
	res, err := command.Run(context.Background(), command.Request{
		Argv:           []string{"yes"},
		InheritEnv:     []string{"PATH"},
		MaxOutputBytes: 10,
	})
	fmt.Println(errors.Is(err, command.ErrOutputLimit), command.Code(err), len(res.Stdout))
	// Output: true OUTPUT_LIMIT 10
}
