function (mode, x, y) {
	const MAX_TEXT = 200, MAX_NODES = 2000, MAX_DEPTH = 16, MAX_CHAIN = 32, MAX_FIELDS = 500;
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
	// walkText reads the text a person sees in root: its text nodes and
	// image alt texts, in order, through open shadow roots (and the nodes
	// their slots show), not scripts or styles. It is bounded.
	function walkText(root, limit) {
		if (!root) return "";
		let out = "", n = 0;
		const stack = [root];
		while (stack.length && n < MAX_NODES && out.length < limit * 2) {
			const node = stack.pop();
			n++;
			if (node.nodeType === 3) { out += node.data; continue; }
			if (node.nodeType !== 1 && node.nodeType !== 11) continue;
			if (skipped.has(node.localName)) continue;
			if (node.localName === "img" && getA(node, "alt")) out += " " + getA(node, "alt") + " ";
			let kids = node.childNodes;
			if (node.shadowRoot) kids = node.shadowRoot.childNodes;
			else if (node.localName === "slot" && node.assignedNodes().length) kids = node.assignedNodes();
			for (let i = Math.min(kids.length, MAX_NODES) - 1; i >= 0; i--) stack.push(kids[i]);
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

	// What acts when clicked. A control (the interactive elements above; a
	// label stands for its control, and one without a control is none)
	// wins over anything between it and the point. Else the nearest element
	// with a handler in its markup (onclick and the like), or whose pointer
	// cursor starts there (not inherited from its parent), acts. Listeners
	// added from script cannot be seen from this world: describe marks the
	// answer "probe", the backend asks the browser which element of chain()
	// has one, and describes that one (at).
	const handlerAttrs = ["onclick", "ondblclick", "onauxclick", "onmousedown", "onmouseup", "onpointerdown",
		"onpointerup", "ontouchstart", "ontouchend"];
	const parentOf = e => e.parentElement || (e.parentNode && e.parentNode.host) || null;
	const isRoot = e => e === e.ownerDocument.documentElement || e === e.ownerDocument.body;
	const matches = (e, sel) => { try { return Element.prototype.matches.call(e, sel); } catch (x) { return false; } };
	const cursor = e => { try { return e.ownerDocument.defaultView.getComputedStyle(e).cursor; } catch (x) { return ""; } };
	const control = e => !matches(e, interactive) ? null : e.localName === "label" ? (e.control || null) : e;
	const handles = e => handlerAttrs.some(a => hasA(e, a));
	const pointerStarts = e => cursor(e) === "pointer" && !(parentOf(e) && cursor(parentOf(e)) === "pointer");
	// chain is the point's element and its ancestors, through shadow roots,
	// below body.
	const chain = () => {
		const out = [];
		for (let e = el; e && e.nodeType === 1 && !isRoot(e) && out.length < MAX_CHAIN; e = parentOf(e)) out.push(e);
		return out;
	};
	function actor(at) {
		if (!el) return {t: el, acts: false, probe: false};
		if (mode !== "point") return {t: el, acts: !!control(el) || handles(el) || !!el.isContentEditable, probe: false};
		const c = chain();
		for (const e of c) {
			const ctl = control(e);
			if (ctl) return {t: ctl, acts: true, probe: false};
		}
		const e = c.find(e => handles(e) || pointerStarts(e)) || (at >= 0 ? c[at] : null);
		if (e) return {t: e, acts: true, probe: false};
		// An iframe this world cannot enter is looked into by the
		// backend, not probed.
		return {t: el, acts: false, probe: c.length > 0 && !(at < 0) && !cross};
	}

	// The button that submitting form by Enter presses: its first submit
	// button, as the browser's implicit submission does.
	function defaultButton(form) {
		let els = null;
		try { els = Object.getOwnPropertyDescriptor(HTMLFormElement.prototype, "elements").get.call(form); } catch (x) { return null; }
		for (let i = 0; i < els.length && i < MAX_FIELDS; i++) {
			const e = els[i], ty = (getA(e, "type") || "").toLowerCase();
			if (e.localName === "button" && (ty || "submit") === "submit" || e.localName === "input" && (ty === "submit" || ty === "image")) return e;
		}
		return null;
	}
	function buttonLabel(b) {
		if (!b) return "";
		const ty = (getA(b, "type") || "").toLowerCase();
		let s = b.localName === "button" ? walkText(b, MAX_TEXT) : ty === "image" ? getA(b, "alt") : (getA(b, "value") || "Submit");
		if (!s.trim()) s = getA(b, "aria-label") || getA(b, "title");
		return clip(s);
	}

	return {
		element: el,
		chain,
		describe(inFrame, at) {
			if (!el) return cross ? {cross} : null;
			const who = actor(typeof at === "number" ? at : undefined);
			const t = who.t;
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
				tag, role, name: clip(name), inputType, acts: who.acts,
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
				out.formSubmit = buttonLabel(defaultButton(form));
			}
			if (link) {
				out.href = absURL(getA(link, "href"), d);
				out.linkTarget = clip(getA(link, "target"));
				out.download = hasA(link, "download");
			}
			if (cross) out.cross = cross;
			if (who.probe) out.probe = true;
			return out;
		},
	};
}
