# want: Duplicate plugin "a"
plugin "a" {
  path   = "bin/a"
  sha256 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
}
plugin "a" {
  path   = "bin/b"
  sha256 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
}
