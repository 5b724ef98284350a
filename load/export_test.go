package load

// SingleCreate exposes singleCreate to the external tests.
var SingleCreate = singleCreate
