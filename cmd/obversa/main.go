// Command obversa runs graphs of agent work durably. See README.md.
package main

import "os"

func main() {
	protect()
	os.Exit(execute(os.Args[1:]))
}
