# want: Number cannot be recorded exactly
plugin "shell" {
  type = "node"
  path = "bin/cmd-engine"
}
graph "dag" {
  node "b" {
    binding = "shell"
    input   = { command = ["echo"], seed = 18446744073709551615, rate = 0.1, small = 1e-400 }
  }
}
