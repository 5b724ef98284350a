package evidence

// FanoutRowLimit lets the external tests lower the fan-out's row limit.
var FanoutRowLimit = &fanoutRowLimit
