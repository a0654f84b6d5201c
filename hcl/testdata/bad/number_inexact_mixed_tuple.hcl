# want: Number cannot be recorded exactly
plugin "shell" {
  type   = "node"
  path   = "bin/cmd-engine"
  config = { list = [2 * 2, 18446744073709551617] }
}
graph "dag" {
  node "b" {
    binding = "shell"
    input   = { command = ["echo"] }
  }
}
