# want: max_rounds is too large
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
    lane   = "writer"
    prompt = "Plan the config."
  }
  loop "config" {
    depends_on = ["plan"]
    max_rounds = 101
    review     = "check"
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
}
