# want: Unsupported argument
plugin "a" {
  path   = "bin/a"
  sha265 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
}
