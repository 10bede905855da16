package observe

// DecodeWhole is decodeWhole for the external tests (trim_test.go), which import report and
// plan, packages that import observe.
var DecodeWhole = decodeWhole
