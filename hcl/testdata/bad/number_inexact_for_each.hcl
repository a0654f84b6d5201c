# want: Number cannot be recorded exactly
plugin "shell" {
  type = "node"
  path = "bin/cmd-engine"
}
graph "dag" {
  node "b" {
    binding  = "shell"
    for_each = { a = { n = 1e400 }, b = { n = -1.5 } }
    input    = { command = ["echo"] }
  }
}
