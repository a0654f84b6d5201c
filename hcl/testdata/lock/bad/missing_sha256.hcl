# want: Missing sha256 in plugin "a"
plugin "a" {
  path = "bin/a"
}
