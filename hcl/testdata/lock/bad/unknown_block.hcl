# want: Unsupported block type
plugins "a" {
}
