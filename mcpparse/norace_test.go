//go:build !race

package mcpparse

const raceEnabled = false
