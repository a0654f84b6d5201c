# want: Node "lint" sets max_items without for_each
plugin "mock" {
  type = "engine"
  path = "bin/mock-engine"
}
plugin "shell" {
  type = "node"
  path = "bin/cmd-engine"
}
lane "writer" {
  requested = { adapter = "mock", provider = "local", model_family = "scripted", model = "m1", tools = [] }
}
graph "dag" {
  node "plan" {
    binding = "shell"
    input   = { command = ["echo", "{\"files\":[\"a.go\"]}"] }
  }
  node "lint" {
    max_items = 10
    binding   = "shell"
    input     = { command = ["vet"] }
  }
}
