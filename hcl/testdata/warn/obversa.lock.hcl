# This file is maintained by "obversa plugin lock". Manual edits may be lost.
# The lock file of the run files in this directory: it pins "engine", which
# plugin_unpinned.hcl renamed to "engine2"; workspace_root_outside.hcl pins
# its plugin in the run file.

plugin "engine" {
  path   = "plugins/engine"
  sha256 = "2222222222222222222222222222222222222222222222222222222222222222"
}
