// The Langflow Assistant chat panel (anywidget view).
//
// State comes from the Python model's traits; the view only renders it and sends small
// requests ({type: "send" | "stop" | "insert" | ...}).  HTML inside messages (answers,
// highlighted code) is rendered by Python from escaped Markdown, never raw model output.
// Step labels and which steps count attempts come from Python (lfassist_jupyter/ui/messages.py,
// ProgressStep): the view renders what it is sent and keeps no table of its own.

function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") el.className = value;
    else if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else if (key === "html") el.innerHTML = value;
    else el.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

function stepLine(step) {
  const base = step.label || step.step;
  if (step.show_attempt) return `${base}… attempt ${step.attempt} of ${step.max_attempts}`;
  return step.done ? base : `${base}…`;
}

async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    // Clipboard API refused (no focus / insecure context): fall back to a hidden textarea.
    const area = h("textarea", { style: "position:fixed;opacity:0" });
    area.value = text;
    document.body.append(area);
    area.select();
    const ok = document.execCommand("copy");
    area.remove();
    return ok;
  }
}

function ioSummary(message) {
  const parts = [];
  if (message.inputs?.length) parts.push("in: " + message.inputs.map((i) => `${i.name} (${i.type})`).join(", "));
  if (message.outputs?.length)
    parts.push("out: " + message.outputs.map((o) => `${o.name} → ${(o.types || []).join(" | ")}`).join(", "));
  return parts.length ? h("div", { class: "lfa-io" }, parts.join(" · ")) : null;
}

// What a card says about how its request went: model fallbacks (notes) and the cost (usage).
function turnFooter(m) {
  const notes = (m.notes || []).map((n) => h("div", { class: "lfa-note", "data-kind": "note" }, n));
  const usage = m.usage ? h("div", { class: "lfa-usage", title: "This request: model calls, tokens, seconds, model" }, m.usage) : null;
  return [...notes, usage];
}

function render({ model, el }) {
  const send = (msg) => model.send(msg);
  const root = h("div", { class: "lfa-panel", role: "region", "aria-label": "Langflow Assistant" });
  // Rendered inside a notebook: that is the kernel's notebook, where Insert writes (the docked
  // view, in the sidebar, has no notebook around it and keeps the id it was told).
  const notebook = el.closest(".jp-NotebookPanel");
  if (notebook && notebook.id && model.get("notebook_id") !== notebook.id) {
    model.set("notebook_id", notebook.id);
    model.save_changes();
  }

  // -- header: model, new session, history
  const modelSelect = h("select", {
    class: "lfa-select", "aria-label": "Model",
    onchange: (e) => send({ type: "select_model", value: e.target.value }),
  });
  const sessionSelect = h("select", {
    class: "lfa-select", "aria-label": "Session history",
    onchange: (e) => e.target.value && send({ type: "switch_session", id: e.target.value }),
  });
  const deleteSession = h("button", {
    class: "lfa-btn lfa-quiet", "aria-label": "Delete this session", title: "Delete this session",
    onclick: () => send({ type: "delete_session", id: model.get("session_id") }),
  }, "Delete session");
  const newSession = h("button", { class: "lfa-btn", "aria-label": "New session", onclick: () => send({ type: "new_session" }) }, "New session");
  const header = h("div", { class: "lfa-header" },
    h("span", { class: "lfa-title" }, "Langflow Assistant"), modelSelect, sessionSelect, deleteSession, newSession);

  // -- transcript, progress, notice, input
  const transcript = h("div", { class: "lfa-transcript", role: "log", "aria-live": "polite", "aria-label": "Conversation" });
  const progress = h("div", { class: "lfa-progress", "aria-live": "polite" });
  const notice = h("div", { class: "lfa-notice", role: "status" });
  const input = h("textarea", {
    class: "lfa-input", rows: 2, "aria-label": "Message the assistant",
    placeholder: "Describe a component, or ask about Langflow… (Enter to send, Shift+Enter for a new line)",
  });
  const sendButton = h("button", { class: "lfa-btn lfa-primary", "aria-label": "Send" }, "Send");
  const composer = h("div", { class: "lfa-composer" }, input, sendButton);
  root.append(header, transcript, progress, notice, composer);
  el.append(root);

  // The notebook that runs this kernel was closed: a docked view outlives it, but its kernel
  // connection went with it, so say so rather than send into the void.
  const ownerGone = () => {
    const target = model.get("notebook_id");
    return !!target && !!model.get("docked") && !document.getElementById(target);
  };
  const GONE = "The notebook this assistant belongs to is not open any more";

  function submit() {
    if (ownerGone()) {
      setNotice(`${GONE}: reopen it (its kernel keeps the conversation) and run %assist panel.`);
      return;
    }
    if (model.get("busy")) {
      send({ type: "stop" });
      return;
    }
    const text = input.value.trim();
    if (!text) return;
    send({ type: "send", text });
    input.value = "";
  }
  sendButton.addEventListener("click", submit);
  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      e.stopPropagation(); // keep JupyterLab from running the cell
      submit();
    }
  });

  function setNotice(text) {
    notice.textContent = text || "";
  }

  // Insert through JupyterLab into the kernel's notebook; when that notebook is not open any
  // more, or the front end cannot insert, copy instead and say so.
  async function insertOrCopy(m, text) {
    const gone = ownerGone();
    if (model.get("can_insert") && !gone) {
      send({ type: "insert", id: m.id });
      return;
    }
    const copied = await copyText(text);
    const why = gone ? GONE : "This front end cannot insert cells";
    setNotice(copied
      ? `${why}: the code was copied to the clipboard — paste it into a new cell.`
      : `${why} and the clipboard is unavailable: copy the code from the card.`);
  }

  function componentCard(m) {
    const ok = m.kind === "component";
    const buttons = [];
    if (ok) {
      buttons.push(h("button", {
        class: "lfa-btn lfa-primary", "aria-label": "Insert into notebook",
        onclick: () => insertOrCopy(m, m.code),
      }, "Insert into notebook"));
      if (model.get("langflow_connected")) {
        buttons.push(h("button", { class: "lfa-btn", "aria-label": "Register with Langflow", onclick: () => send({ type: "register", id: m.id }) }, "Register with Langflow"));
      }
      // A Langflow extension bundle next to the notebook (lfx extension layout): the other way in.
      buttons.push(h("button", {
        class: "lfa-btn", "aria-label": "Export as a Langflow extension",
        title: "Add this component to an extension bundle next to the notebook (pip-installable into Langflow)",
        onclick: () => send({ type: "export_component", id: m.id }),
      }, "Export"));
    } else {
      buttons.push(h("button", { class: "lfa-btn lfa-primary", "aria-label": "Try again", onclick: () => send({ type: "retry", id: m.id }) }, "Try again"));
    }
    buttons.push(h("button", {
      class: "lfa-btn", "aria-label": "Copy code",
      onclick: async () => setNotice((await copyText(m.code)) ? "Code copied to the clipboard." : "Could not copy."),
    }, "Copy"));
    const attempts = m.attempts ? ` · ${m.attempts} attempt${m.attempts === 1 ? "" : "s"}` : "";
    return h("div", { class: `lfa-card ${ok ? "lfa-ok" : "lfa-fail"}`, "data-kind": m.kind },
      h("div", { class: "lfa-card-head" },
        h("b", {}, m.class_name || "Component"),
        verdictBadge(m, ok),
        h("span", { class: "lfa-muted" }, attempts)),
      ok ? null : h("div", { class: "lfa-error" }, m.error || "The component did not pass validation."),
      m.lines?.length ? h("div", { class: "lfa-lines" }, m.lines.map((l) => h("div", { class: "lfa-line-note" }, l.text))) : null,
      ioSummary(m),
      h("details", { class: "lfa-code" },
        h("summary", {}, ok ? "Code" : "Details and the last code"),
        h("div", { html: m.code_html })),
      h("div", { class: "lfa-actions" }, buttons),
      turnFooter(m));
  }

  // The verdict as Python says it (m.badge: "validated (reduced isolation: ...)" when the sandbox ran
  // without its OS layer); a restored card has none and says the plain word.
  function verdictBadge(m, ok) {
    const reduced = ok && m.badge && m.badge !== "validated";
    const unjudged = m.badge === "not judged here"; // never valid, never a failure of the flow
    const kind = reduced || unjudged ? "lfa-badge-warn" : ok ? "lfa-badge-ok" : "lfa-badge-fail";
    return h("span", { class: `lfa-badge ${kind}` }, m.badge || (ok ? "validated" : "not validated"));
  }

  // A flow card.  picture_html is inline SVG generated by Python (ui/render/picture.py) from escaped
  // text, with no script; every other field is inserted as text.
  const runInputs = new Map(); // flow card id -> the run input typed there

  function flowCard(m) {
    const ok = !!m.validated;
    // What was typed survives a re-render of the transcript (a new message, the real run's plan).
    const probe = h("input", {
      class: "lfa-input lfa-probe", type: "text", placeholder: "run input (hello)", "aria-label": "Run input",
      oninput: (e) => runInputs.set(m.id, e.target.value),
    });
    probe.value = runInputs.get(m.id) || "";
    const buttons = [
      h("button", {
        class: "lfa-btn lfa-primary", "aria-label": "Insert the flow cell", disabled: !m.cell,
        onclick: () => insertOrCopy(m, m.cell || ""),
      }, "Insert"),
      h("button", { class: "lfa-btn", "aria-label": "Save the flow file", onclick: () => send({ type: "save_flow", id: m.id }) }, "Save"),
    ];
    if (model.get("langflow_connected")) {
      buttons.push(h("button", { class: "lfa-btn", "aria-label": "Register the flow with Langflow", onclick: () => send({ type: "register_flow", id: m.id }) }, "Register"));
    }
    buttons.push(h("button", {
      class: "lfa-btn", "aria-label": "Probe-run the flow", title: "A probe run in the sandbox: models stubbed, no keys, no network",
      onclick: () => send({ type: "run_flow", id: m.id, text: probe.value }),
    }, "Run"), h("button", {
      class: "lfa-btn", "aria-label": "Run the flow for real",
      title: "Run it on this machine with its models called, with only the variables you allow",
      onclick: () => send({ type: "run_for_real", id: m.id, text: probe.value }),
    }, "Run for real"), probe);
    if (m.provision) {
      // Not judged here: the plan says what a separate environment would install; the click is the yes.
      buttons.unshift(h("button", {
        class: "lfa-btn lfa-primary", "aria-label": "Judge the flow in a separate environment", title: m.provision,
        onclick: () => send({ type: "provision_flow", id: m.id }),
      }, "Judge elsewhere"));
    }
    buttons.push(h("button", {
      class: "lfa-btn lfa-quiet", "aria-label": "Undo the last flow edit", title: "Restore the flow before the last edit",
      onclick: () => send({ type: "undo_flow", id: m.id }),
    }, "Undo"));
    const attempts = m.attempts ? ` · ${m.attempts} attempt${m.attempts === 1 ? "" : "s"}` : "";
    const lines = (m.lines || []).map((l) =>
      h("div", { class: l.ok === true ? "lfa-line-ok" : l.ok === false ? "lfa-line-fail" : "lfa-line-note" }, l.text));
    const plan = model.get("real_run") || {};
    return h("div", { class: `lfa-card lfa-flow ${ok ? "lfa-ok" : "lfa-fail"}`, "data-kind": "flow" },
      h("div", { class: "lfa-card-head" },
        h("b", {}, m.flow_name || "Flow"),
        verdictBadge(m, ok),
        h("span", { class: "lfa-muted" }, attempts)),
      m.picture_html ? h("div", { class: "lfa-picture", html: m.picture_html }) : null,
      h("div", { class: "lfa-lines" }, lines),
      m.spec ? h("details", { class: "lfa-code" }, h("summary", {}, "Spec"), h("pre", {}, m.spec)) : null,
      h("div", { class: "lfa-actions" }, buttons),
      plan.id === m.id ? realRunPlan(m, plan, probe) : null,
      turnFooter(m));
  }

  // The consent before a real run (ChatPanel.real_run, from Python): the variables the flow wants --
  // names only; the values stay in the kernel -- and the hosts it may reach. What is ticked here is
  // allowed for this session's real runs; the panel asks again only for a variable not allowed yet.
  function realRunPlan(m, plan, probe) {
    const boxes = (plan.variables || []).map((v) => h("input", {
      type: "checkbox", checked: v.allowed || (v.present && !plan.running), disabled: !v.present || plan.running,
      "aria-label": `Allow ${v.name}`, "data-name": v.name,
    }));
    const rows = (plan.variables || []).map((v, i) => h("label", { class: "lfa-consent-var" }, boxes[i], " ",
      h("code", {}, v.name), h("span", { class: "lfa-muted" },
        ` for ${v.where}${v.present ? " (from the kernel's environment)" : " — not set in the kernel's environment"}`)));
    const hosts = h("input", {
      class: "lfa-input lfa-hosts", type: "text", placeholder: "also allow host:port", "aria-label": "Also allow hosts",
      disabled: plan.running,
    });
    const go = () => send({
      type: "run_for_real", id: m.id, text: probe.value, hosts: hosts.value,
      allow: boxes.filter((b) => b.checked).map((b) => b.getAttribute("data-name")),
    });
    return h("div", { class: "lfa-consent", role: "group", "aria-label": "Real run" },
      h("div", { class: "lfa-consent-head" },
        "Run for real: its models are called on this machine, with only the variables you allow (for this session)."),
      rows.length ? h("div", {}, "Variables it wants:", rows) : h("div", { class: "lfa-muted" }, "It wants no variables."),
      h("div", {}, "It may reach: " + ((plan.hosts || []).join(", ") || "no host (loopback only)")),
      (plan.extra_hosts || []).length ? h("div", { class: "lfa-muted" }, "You added: " + plan.extra_hosts.join(", ")) : null,
      (plan.notes || []).map((n) => h("div", { class: "lfa-line-note" }, n)),
      plan.error ? h("div", { class: "lfa-error", role: "alert" }, plan.error) : null,
      h("div", { class: "lfa-actions" },
        hosts,
        h("button", { class: "lfa-btn lfa-primary", "aria-label": "Run for real now", disabled: plan.running, onclick: go },
          plan.running ? "Running…" : "Run"),
        h("button", { class: "lfa-btn lfa-quiet", "aria-label": "Close the real run", onclick: () => send({ type: "cancel_real_run" }) },
          "Cancel")));
  }

  // A real run's answer: the run's output is untrusted text (a text node, never HTML).
  function runCard(m) {
    const ok = !!m.validated;
    const lines = (m.lines || []).map((l) =>
      h("div", { class: l.ok === true ? "lfa-line-ok" : l.ok === false ? "lfa-line-fail" : "lfa-line-note" }, l.text));
    return h("div", { class: `lfa-card ${ok ? "lfa-ok" : "lfa-fail"}`, "data-kind": "run" },
      h("div", { class: "lfa-card-head" }, h("b", {}, `Real run · ${m.flow_name || "flow"}`)),
      ok ? h("div", { class: "lfa-run-answer" }, m.text || "") : h("div", { class: "lfa-error" }, m.error || "The run failed."),
      h("div", { class: "lfa-lines" }, lines));
  }

  function messageView(m) {
    if (m.kind === "flow") return h("div", { class: "lfa-msg lfa-assistant" }, flowCard(m));
    if (m.kind === "run") return h("div", { class: "lfa-msg lfa-assistant" }, runCard(m));
    if (m.role === "user") return h("div", { class: "lfa-msg lfa-user" }, m.text);
    if (m.kind === "component" || m.kind === "failure") return h("div", { class: "lfa-msg lfa-assistant" }, componentCard(m));
    if (m.kind === "cancelled") {
      return h("div", { class: "lfa-msg lfa-assistant lfa-cancelled", "data-kind": "cancelled" },
        m.html ? h("div", { class: "lfa-md", html: m.html }) : null, h("div", { class: "lfa-muted" }, "■ " + (m.note || "Request cancelled")));
    }
    if (m.kind === "error") {
      return h("div", { class: "lfa-msg lfa-assistant", "data-kind": "error" },
        h("div", { class: "lfa-error" }, m.text), turnFooter(m));
    }
    return h("div", { class: "lfa-msg lfa-assistant", "data-kind": "answer" },
      h("div", { class: "lfa-md", html: m.html || "" }), turnFooter(m));
  }

  function renderTranscript() {
    const stick = transcript.scrollHeight - transcript.scrollTop - transcript.clientHeight < 40;
    transcript.replaceChildren(...model.get("messages").map(messageView).filter(Boolean));
    if (!model.get("messages").length) {
      transcript.append(h("div", { class: "lfa-empty" }, "Ask for a component — “a component that extracts emails from text” — or ask a question about Langflow."));
    }
    if (stick) transcript.scrollTop = transcript.scrollHeight;
  }

  function renderProgress() {
    const state = model.get("progress") || {};
    const steps = state.steps || [];
    const text = model.get("streaming_text");
    if (!model.get("busy")) {
      progress.replaceChildren();
      return;
    }
    const items = steps.map((s, i) => {
      const current = i === steps.length - 1 && !s.done;
      const failed = s.failed;
      const cls = current ? "lfa-current" : failed ? "lfa-failed" : "lfa-done";
      const mark = current ? "▸ " : failed ? "✗ " : "✓ ";
      const detail = failed && s.error ? `: ${s.error.split("\n")[0].slice(0, 140)}` : "";
      return h("li", { class: cls }, mark + stepLine(s) + detail);
    });
    const parts = [items.length ? h("ul", { class: "lfa-steps" }, items) : h("div", { class: "lfa-muted" }, "Thinking…")];
    if (text) parts.push(h("div", { class: "lfa-streaming" }, text));
    progress.replaceChildren(...parts);
    transcript.scrollTop = transcript.scrollHeight;
  }

  function renderControls() {
    const busy = model.get("busy");
    sendButton.textContent = busy ? "Stop" : "Send";
    sendButton.setAttribute("aria-label", busy ? "Stop" : "Send");
    sendButton.classList.toggle("lfa-stop", busy);
    const models = model.get("models");
    modelSelect.replaceChildren(...(models.length
      ? models.map((m) => h("option", { value: m.value, selected: m.value === model.get("selected_model") }, m.label))
      : [h("option", { value: "" }, "No provider configured")]));
    const current = model.get("session_id");
    const sessions = model.get("sessions");
    const options = [h("option", { value: "" }, "Sessions…")];
    for (const s of sessions) {
      options.push(h("option", { value: s.id, selected: s.id === current }, (s.title || s.id).slice(0, 40)));
    }
    sessionSelect.replaceChildren(...options);
  }

  const onMessages = () => renderTranscript();
  const onProgress = () => renderProgress();
  const onControls = () => { renderControls(); renderProgress(); };
  const onNotice = () => setNotice(model.get("notice"));
  const onDocked = () => {
    root.classList.toggle("lfa-docked", !!model.get("docked"));
    el.classList.toggle("lfa-docked-el", !!model.get("docked"));
  };
  model.on("change:messages", onMessages);
  model.on("change:progress", onProgress);
  model.on("change:streaming_text", onProgress);
  model.on("change:busy", onControls);
  model.on("change:models", onControls);
  model.on("change:selected_model", onControls);
  model.on("change:sessions", onControls);
  model.on("change:session_id", onControls);
  model.on("change:notice", onNotice);
  model.on("change:langflow_connected", onMessages);
  model.on("change:real_run", onMessages);
  model.on("change:docked", onDocked);
  onDocked();
  renderControls();
  renderTranscript();
  renderProgress();
  onNotice();

  return () => {
    model.off("change:messages", onMessages);
    model.off("change:progress", onProgress);
    model.off("change:streaming_text", onProgress);
    model.off("change:busy", onControls);
    model.off("change:models", onControls);
    model.off("change:selected_model", onControls);
    model.off("change:sessions", onControls);
    model.off("change:session_id", onControls);
    model.off("change:notice", onNotice);
    model.off("change:langflow_connected", onMessages);
    model.off("change:real_run", onMessages);
    model.off("change:docked", onDocked);
  };
}

export default { render };
