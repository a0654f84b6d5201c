# This file is maintained by "obversa plugin lock". Manual edits may be lost.
# The lock file of the run files in this directory: plugin_pins_disagree.hcl
# pins "pinned" to another digest here.

plugin "pinned" {
  path   = "plugins/engine"
  sha256 = "2222222222222222222222222222222222222222222222222222222222222222"
}
