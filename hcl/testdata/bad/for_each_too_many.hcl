# want: for_each has 2 items, more than max_items 1
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
    for_each  = ["a.go", "b.go"]
    max_items = 1
    binding   = "shell"
    input     = { command = ["vet", "${each.key}"] }
  }
}
