function (mode, x, y) {
	const MAX_TEXT = 200, MAX_NODES = 2000, MAX_DEPTH = 16;
	let doc = document, el = null, cross = null;
	for (let depth = 0; depth < MAX_DEPTH; depth++) {
		if (mode === "point") {
			el = doc.elementFromPoint(x, y);
			for (let i = 0; el && el.shadowRoot && i < MAX_DEPTH; i++) {
				const inner = el.shadowRoot.elementFromPoint(x, y);
				if (!inner || inner === el) break;
				el = inner;
			}
		} else {
			el = doc.activeElement;
			for (let i = 0; el && el.shadowRoot && el.shadowRoot.activeElement && i < MAX_DEPTH; i++) el = el.shadowRoot.activeElement;
			if (el === doc.body && !(el && el.isContentEditable)) el = null;
		}
		if (!el) break;
		const tag = el.localName;
		if (tag !== "iframe" && tag !== "frame") break;
		const win = doc.defaultView, r = el.getBoundingClientRect(), cs = win.getComputedStyle(el);
		x = x - r.left - (parseFloat(cs.borderLeftWidth) || 0) - (parseFloat(cs.paddingLeft) || 0);
		y = y - r.top - (parseFloat(cs.borderTopWidth) || 0) - (parseFloat(cs.paddingTop) || 0);
		let sub = null;
		try { sub = el.contentDocument; } catch (e) {}
		if (!sub) { cross = {X: x, Y: y}; break; }
		doc = sub;
	}

	const getA = (e, n) => (e && Element.prototype.getAttribute.call(e, n)) || "";
	const hasA = (e, n) => !!e && Element.prototype.hasAttribute.call(e, n);
	const skipped = new Set(["script", "style", "template", "noscript"]);
	function walkText(root, limit) {
		if (!root) return "";
		let out = "", n = 0;
		const w = root.ownerDocument.createTreeWalker(root, NodeFilter.SHOW_TEXT | NodeFilter.SHOW_ELEMENT, {
			acceptNode: node => skipped.has(node.localName) ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT,
		});
		for (let node = w.currentNode; node && n < MAX_NODES && out.length < limit * 2; node = w.nextNode(), n++) {
			if (node.nodeType === 3) out += node.data;
			else if (node.localName === "img" && getA(node, "alt")) out += " " + getA(node, "alt") + " ";
		}
		return out.replace(/\s+/g, " ").trim().slice(0, limit);
	}
	function clip(s) { return String(s || "").replace(/\s+/g, " ").trim().slice(0, MAX_TEXT); }
	function absURL(u, d) {
		try { return new URL(u, d.baseURI).href; } catch (e) { return clip(u); }
	}

	const textInputs = ["text", "search", "email", "url", "tel", "password", "number", "date", "datetime-local",
		"month", "week", "time"];
	const widgetRoles = "button,link,menuitem,menuitemcheckbox,menuitemradio,tab,checkbox,radio,switch,option," +
		"textbox,searchbox,combobox,slider,spinbutton,treeitem,gridcell";
	const interactive = "a[href],area[href],button,input,select,textarea,summary,label,option," +
		widgetRoles.split(",").map(r => "[role=" + r + "]").join(",") + ",[contenteditable]:not([contenteditable=false])";

	return {
		element: el,
		describe(inFrame) {
			if (!el) return cross ? {cross} : null;
			let t = el;
			if (mode === "point" && el.closest) t = el.closest(interactive) || el;
			// A click on a label reaches its control (a styled label is
			// how many pages show a file picker).
			if (t.localName === "label" && t.control) t = t.control;
			const d = t.ownerDocument;
			const tag = t.localName || "";
			const attr = n => getA(t, n);
			let inputType = "";
			if (tag === "input") inputType = (attr("type") || "text").toLowerCase();
			if (tag === "button") inputType = (attr("type") || "submit").toLowerCase();
			if (tag === "input" && !textInputs.concat(["checkbox", "radio", "file", "submit", "reset", "button", "image",
				"hidden", "range", "color"]).includes(inputType)) inputType = "text";
			const form = (tag === "input" || tag === "button" || tag === "select" || tag === "textarea") ? t.form : (t.closest && t.closest("form"));
			const fattr = n => getA(form, n);

			let role = attr("role").trim().split(/\s+/)[0] || "";
			if (!role) {
				const implicit = {a: attr("href") ? "link" : "", area: attr("href") ? "link" : "", button: "button",
					select: (t.multiple || t.size > 1) ? "listbox" : "combobox", textarea: "textbox", summary: "button",
					option: "option", img: attr("alt") === "" && hasA(t, "alt") ? "presentation" : "img",
					h1: "heading", h2: "heading", h3: "heading", h4: "heading", h5: "heading", h6: "heading",
					form: "form", nav: "navigation", dialog: "dialog", li: "listitem", ul: "list", ol: "list",
					td: "cell", th: "columnheader", tr: "row", table: "table", progress: "progressbar"};
				role = implicit[tag] || "";
				if (tag === "input") {
					role = {button: "button", submit: "button", reset: "button", image: "button", checkbox: "checkbox",
						radio: "radio", range: "slider", number: "spinbutton", search: "searchbox"}[inputType] ||
						(textInputs.includes(inputType) ? (attr("list") ? "combobox" : "textbox") : "");
				}
				if (!role && t.isContentEditable) role = "textbox";
			}

			let name = "";
			const labelled = attr("aria-labelledby");
			if (labelled) name = labelled.split(/\s+/).slice(0, 8).map(id => walkText(d.getElementById(id), MAX_TEXT)).join(" ");
			if (!name.trim()) name = attr("aria-label");
			if (!name.trim() && t.labels && t.labels.length) name = Array.from(t.labels).slice(0, 4).map(l => walkText(l, MAX_TEXT)).join(" ");
			if (!name.trim() && tag === "input" && ["submit", "reset", "button"].includes(inputType)) name = attr("value") || {submit: "Submit", reset: "Reset"}[inputType] || "";
			if (!name.trim() && (tag === "img" || (tag === "input" && inputType === "image") || tag === "area")) name = attr("alt");
			const fromContent = ["button", "link", "menuitem", "menuitemcheckbox", "menuitemradio", "tab", "checkbox",
				"radio", "switch", "option", "heading", "cell", "columnheader", "treeitem", "gridcell"];
			if (!name.trim() && fromContent.includes(role) && tag !== "input") name = walkText(t, MAX_TEXT);
			if (!name.trim()) name = attr("title");
			if (!name.trim()) name = attr("placeholder");
			if (!name.trim() && (tag === "input" || tag === "select" || tag === "textarea")) name = attr("name") || attr("id");

			const link = t.closest ? t.closest("a[href],area[href]") : null;
			const disabled = !!t.disabled || attr("aria-disabled") === "true";
			let editable = false;
			if (tag === "input") editable = textInputs.includes(inputType) && !disabled && !t.readOnly;
			else if (tag === "textarea") editable = !disabled && !t.readOnly;
			else editable = !!t.isContentEditable;

			// What a person sees on the element. A field's typed value is
			// never read (it may be a password): a button input shows its
			// value, an image input its alt text, an empty field its
			// placeholder, a select its chosen option.
			const visibleText = () => {
				if (tag === "input") {
					if (["submit", "reset", "button"].includes(inputType)) return clip(attr("value") || {submit: "Submit", reset: "Reset"}[inputType] || "");
					if (inputType === "image") return clip(attr("alt"));
					return clip(attr("placeholder"));
				}
				if (tag === "textarea") return clip(attr("placeholder"));
				if (tag === "select") {
					const o = t.selectedOptions && t.selectedOptions[0];
					return o ? walkText(o, MAX_TEXT) : "";
				}
				return walkText(t, MAX_TEXT);
			};
			const out = {
				tag, role, name: clip(name), inputType,
				autocomplete: (tag === "input" || tag === "select" || tag === "textarea" || tag === "form") ? clip(attr("autocomplete")) : "",
				editable,
				text: visibleText(),
				frameUrl: inFrame || d !== document ? d.URL : "",
			};
			if (form) {
				const submitter = (inputType === "submit" || inputType === "image");
				out.formAction = absURL((submitter && attr("formaction")) || fattr("action") || d.URL, d);
				out.formMethod = ((submitter && attr("formmethod")) || fattr("method") || "get").toLowerCase();
				if (out.formMethod !== "post" && out.formMethod !== "dialog") out.formMethod = "get";
			}
			if (link) {
				out.href = absURL(getA(link, "href"), d);
				out.linkTarget = clip(getA(link, "target"));
				out.download = hasA(link, "download");
			}
			if (cross) out.cross = cross;
			return out;
		},
	};
}
