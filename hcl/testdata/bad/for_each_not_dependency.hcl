# want: Node "lint" does not depend on "plan"
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
    for_each = "${jsondecode(input.results.plan.stdout).files}"
    binding  = "shell"
    input    = { command = ["vet", "${each.key}"] }
  }
}
