# want: Invalid sha256 digest
plugin "a" {
  path   = "bin/a"
  sha256 = "nothex"
}
