package hitjs

// What a file input received from an upload, which both backends confirm
// on the page's side: WatchFiles, called with the input element before it
// is handed files, listens on the input itself for the change event that
// this fires and keeps the files the input held then (a page may empty the
// input as soon as it has read them); ReceivedFiles answers those, or,
// without a change event, the files the input holds now, as a list of
// {name, size}. Both are function expressions taking the element.
const (
	WatchFiles = `function (el) {
		el.spotterReceived = null;
		el.addEventListener("change", () => {
			el.spotterReceived = Array.from(el.files || [], f => ({name: f.name, size: f.size}));
		}, {once: true, capture: true});
	}`
	ReceivedFiles = `function (el) {
		return el.spotterReceived || Array.from(el.files || [], f => ({name: f.name, size: f.size}));
	}`
)
