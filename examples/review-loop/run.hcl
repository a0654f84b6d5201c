# Review loop: a writer drafts a service config, a reviewer finds the
# request timeout missing, the writer revises with that finding, and the
# review passes in round 2. Offline, on the mock engine.
#
#   make demo-review-loop   # builds, pins and runs this file
#
# plan    — an engine node: what the config must hold.
# config  — a loop of two members, run once per round:
#           author  writes the config (round 2 reads ${loop.findings});
#           review  answers with a verdict {status, summary, findings}.
# ship    — a data node: prints the last round's config.

workspace {
  root     = "."
  provider = "none"
}

storage {
  directory = ".obversa"
}

plugin "mock" {
  type = "engine"
  path = "../../bin/mock-engine"
  config = {
    responses = [
      { node = "plan", text = "Service api: listen on :8080 and call the billing backend." },
      # The author writes a timeout only once a review asked for it.
      { node = "author", prompt_contains = "Fix:", text = "listen          = \":8080\"\nbackend         = \"billing\"\nrequest_timeout = \"5s\"\n" },
      { node = "author", text = "listen  = \":8080\"\nbackend = \"billing\"\n" },
      # The reviewer passes a config with a request timeout and fails one without.
      { node = "review", prompt_contains = "request_timeout", json = { status = "pass", summary = "The config sets a request timeout.", findings = [] } },
      { node = "review", json = { status = "fail", summary = "The config has no request timeout.", findings = [
        { reviewer = "review", evidence = "request_timeout is missing: a slow billing backend would hold every connection open." },
      ] } },
    ]
  }
}

plugin "shell" {
  type = "node"
  path = "../../bin/cmd-engine"
}

lane "writer" {
  requested = { adapter = "mock", provider = "local", model_family = "scripted", model = "m1", tools = [] }
}

lane "reviewer" {
  requested = { adapter = "mock", provider = "local", model_family = "scripted", model = "m1", tools = [] }
}

graph "dag" {
  node "plan" {
    lane   = "writer"
    prompt = "Plan the config of the api service."
  }

  loop "config" {
    depends_on = ["plan"]
    max_rounds = 3
    review     = "review"
    until      = "${length(trimspace(input.results.author)) > 0}" # a draft exists

    node "author" {
      lane   = "writer"
      prompt = "Write the config for: ${input.results.plan}${loop.round > 1 ? "\nFix: ${loop.findings}" : ""}"
    }

    node "review" {
      lane       = "reviewer"
      depends_on = ["author"]
      prompt     = "Review this config and answer with a verdict:\n${input.results.author}"
    }
  }

  node "ship" {
    depends_on = ["config"]
    binding    = "shell"
    input      = { command = ["cat"], stdin = "${input.results.config.author}" }
    retry_safe = true
  }
}
