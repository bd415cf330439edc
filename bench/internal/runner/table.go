package main

import (
	"fmt"
	"strings"
)

// printHeader prints a Markdown table's header row and its rule.
func printHeader(cells ...string) {
	printRow(cells...)
	fmt.Println("|" + strings.Repeat("---|", len(cells)))
}

// printRow prints one row of a Markdown table; a "|" inside a cell
// becomes "/", so that it does not split the cell.
func printRow(cells ...string) {
	out := make([]string, len(cells))
	for i, c := range cells {
		out[i] = strings.ReplaceAll(c, "|", "/")
	}
	fmt.Println("| " + strings.Join(out, " | ") + " |")
}
