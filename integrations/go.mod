// A module boundary, holding no Go code: it keeps the npm packages under
// integrations/ (whose node_modules may ship Go sources, flatted does)
// out of the main module's ./... patterns.
module github.com/promptd/promptd/integrations

go 1.26
