// Package releaseconfig holds the test that keeps the release workflow
// (.github/workflows/release.yml) in step with the repository: the
// platforms it builds, the packages and files it names, and the version
// stamp the Makefile defines. The workflow's syntax is checked by
// actionlint in `make cross`. It has no code of its own.
package releaseconfig
