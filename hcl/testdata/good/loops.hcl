# A review loop, a static and a dynamic for_each (docs/run-file.md).
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
    input   = { command = ["echo", "{}"] }
  }
  loop "config" {
    depends_on = ["plan"]
    max_rounds = 4
    review     = "check"
    until      = "${length(input.results.author) > 0}"
    node "author" {
      lane   = "writer"
      prompt = "Write the config.${loop.round > 1 ? " Fix: ${loop.findings}" : ""}"
    }
    node "check" {
      binding    = "shell"
      depends_on = ["author"]
      input      = { command = ["sh", "-c", "grep -q timeout"], stdin = "${input.results.author}" }
      retry_safe = true
    }
  }
  node "ship" {
    depends_on = ["config"]
    binding    = "shell"
    input      = { command = ["cat"], stdin = "${input.results.config.author}" }
  }
  node "lint" {
    for_each   = ["a.go", "b/c.go"]
    binding    = "shell"
    input      = { command = ["vet", "${each.key}"] }
  }
  node "each-file" {
    depends_on = ["plan"]
    for_each   = "${jsondecode(input.results.plan.stdout).files}"
    max_items  = 500
    lane       = "writer"
    prompt     = "Review ${each.value}"
  }
}
