# want: Number cannot be recorded exactly
plugin "shell" {
  type = "node"
  path = "bin/cmd-engine"
  config = { limit = 1e20 * 3 + 1 }
}
graph "dag" {
  node "b" {
    binding = "shell"
    input   = { command = ["echo"], seed = 1e20 * 3 + 1, big = -(1e400 * 1) }
  }
}
