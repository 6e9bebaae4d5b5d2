/* The explorer's page: tabs over the read-only JSON API (see explore/app.py). Texts of the
 * index are put in the page as text only (GraphRAGExplain.el / textContent), never as HTML;
 * request parameters are encoded with URLSearchParams / encodeURIComponent. */
(function () {
  "use strict";
  var X = window.GraphRAGExplain;
  var el = X.el;
  var state = { summary: null, entityGraph: null, offsets: {}, current: null,
                passageOffset: 0, reportOffset: 0 };

  function $(id) { return document.getElementById(id); }

  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }

  function status(id, text, error) {
    var node = $(id);
    node.textContent = text || "";
    node.classList.toggle("error", !!error);
  }

  function api(path, params) {
    var query = params ? "?" + new URLSearchParams(params).toString() : "";
    return fetch(path + query, { headers: { "Accept": "application/json" } })
      .then(function (response) {
        return response.json().then(function (body) {
          if (!response.ok) throw new Error(body.error || response.statusText);
          return body;
        });
      });
  }

  /* ---------------------------------------------------------------- tabs */

  function showTab(name) {
    document.querySelectorAll(".ex-tabs button").forEach(function (button) {
      button.classList.toggle("active", button.getAttribute("data-tab") === name);
    });
    document.querySelectorAll(".ex-tab").forEach(function (section) {
      section.hidden = section.id !== "tab-" + name;
    });
    if (name === "passages" && !$("passages").firstChild) loadPassages(0);
    if (name === "communities" && !$("reports").firstChild) loadReports(0);
    if (name === "entities" && state.entityGraph) state.entityGraph.resize();
  }

  /* ---------------------------------------------------------------- the index */

  function showSummary(summary) {
    state.summary = summary;
    var c = summary.counts;
    $("summary-line").textContent = summary.uri + " · " + summary.collection_prefix + " · " +
      c.passages + " passages, " + c.entities + " entities, " + c.relations + " relations" +
      (c.communities !== null ? ", " + c.communities + " communities" : "");
    var counts = $("counts");
    clear(counts);
    Object.keys(c).forEach(function (key) {
      counts.appendChild(el("tr", null, el("th", null, key.replace("_", " ")),
        el("td", null, c[key] === null ? "not built" : String(c[key]))));
    });
    var bars = $("degrees");
    clear(bars);
    var most = Math.max.apply(null, summary.degrees.map(function (d) { return d.entities; })
      .concat([1]));
    summary.degrees.forEach(function (d) {
      var fill = el("div", { "class": "ex-bar-fill" });
      fill.style.width = Math.round(600 * d.entities / most) + "px";
      bars.appendChild(el("div", { "class": "ex-bar" },
        el("span", { "class": "ex-bar-label" }, d.low === d.high ? String(d.low)
          : d.low + "–" + d.high), fill, el("span", null, String(d.entities))));
    });
    /* a served graph's distribution and hubs are of a sample of its entities: say so */
    var sample = summary.sample;
    $("degrees-sample").hidden = $("hubs-sample").hidden = !sample;
    if (sample) {
      $("degrees-sample").textContent = "sample of " + sample.entities + " entities (of " +
        sample.of + "), read from Milvus";
      $("hubs-sample").textContent = "the most connected of the sample of " +
        sample.entities + " entities";
    }
    var hubs = $("hubs");
    clear(hubs);
    summary.hubs.forEach(function (hub) { hubs.appendChild(entityButton(hub)); });
    var method = $("method");
    clear(method);
    summary.methods.forEach(function (name) {
      method.appendChild(el("option", { value: name }, name));
    });
    var level = $("level");
    clear(level);
    for (var i = 0; i < (c.community_levels || 0); i++) {
      level.appendChild(el("option", { value: String(i) }, String(i)));
    }
    $("top-k").max = String(summary.limits.top_k);
    $("question").maxLength = summary.limits.question_chars;
    document.body.setAttribute("data-ready", "1");
  }

  /* ---------------------------------------------------------------- ask */

  function plural(count, word) { return count + " " + word + (count === 1 ? "" : "s"); }

  /* Draw the next page of an entity's relations, skipping pages whose relations are all
   * drawn already; resolves to {page, added} (added: relations drawn by this click). */
  /* Draw the next page of an entity's relations into cy; `current` (optional) says whether
   * the answer is still wanted (null when another entity was opened meanwhile). */
  function expandInto(id, cy, current) {
    function next() {
      return api("/api/entity/" + encodeURIComponent(id), { offset: state.offsets[id] || 0,
                                                             limit: 15 })
        .then(function (page) {
          if (current && !current()) return null;
          state.offsets[id] = page.offset + page.relations.length;
          var added = X.addNeighbourhood(cy, page);
          if (!added && page.relations.length && state.offsets[id] < page.total) return next();
          return { page: page, added: added };
        });
    }
    return next();
  }

  /* What an expansion did, in words: what it added and whether a click adds more. */
  function expansion(name, id, result) {
    var total = result.page.total, left = total - state.offsets[id];
    if (!result.added) {
      return name + ": all " + plural(total, "relation") + " are drawn already";
    }
    return name + ": " + plural(result.added, "relation") + " added" + (left > 0
      ? " (" + left + " not drawn yet: click again for more)"
      : " (all " + total + " drawn)");
  }

  function ask(event) {
    event.preventDefault();
    var question = $("question").value.trim();
    if (!question) { status("ask-status", "Type a question first.", true); return; }
    status("ask-status", "Running " + $("method").value + "…");
    $("ask-button").disabled = true;
    var started = performance.now();
    api("/api/ask", { q: question, method: $("method").value, top_k: $("top-k").value })
      .then(function (data) {
        state.offsets = {};
        X.render($("explanation"), data, { onEntity: function (id, name, cy) {
          status("ask-status", "Expanding " + name + "…");
          expandInto(id, cy).then(function (result) {
            status("ask-status", expansion(name, id, result));
          }, function (error) { status("ask-status", error.message, true); });
        } });
        status("ask-status", "Answered in " + Math.round(performance.now() - started) +
          " ms. Click an entity of the graph to expand it.");
      }, function (error) { status("ask-status", error.message, true); })
      .then(function () { $("ask-button").disabled = false; });
  }

  /* ---------------------------------------------------------------- entities */

  function entityButton(entity) {
    var button = el("button", { type: "button", "data-entity-id": entity.id },
                    entity.name + " (" + entity.degree + ")");
    button.addEventListener("click", function () {
      showTab("entities");
      openEntity(entity.id);
    });
    return el("li", null, button);
  }

  function searchEntities(event) {
    event.preventDefault();
    var text = $("entity-query").value.trim();
    if (!text) return;
    status("entity-status", "Searching…");
    api("/api/entities", { q: text, limit: 30 }).then(function (hits) {
      var list = $("entity-hits");
      clear(list);
      hits.forEach(function (hit) { list.appendChild(entityButton(hit)); });
      status("entity-status", hits.length ? hits.length + " entities" : "No entity matches.");
    }, function (error) { status("entity-status", error.message, true); });
  }

  function entityGraph() {
    if (!state.entityGraph) {
      state.entityGraph = X.drawGraph($("neighbourhood"), { nodes: [], edges: [] },
        function (id) { expandEntity(id); }, $("neighbourhood-detail"));
    }
    return state.entityGraph;
  }

  function openEntity(id) {
    state.opened = (state.opened || 0) + 1;  /* the last entity clicked wins */
    var cy = entityGraph();
    cy.elements().remove();
    state.offsets = {};
    expandEntity(id);
  }

  function expandEntity(id) {
    var cy = entityGraph(), opened = state.opened;
    function current() { return state.opened === opened; }
    return expandInto(id, cy, current).then(function (result) {
      if (!result) return;
      var page = result.page;
      state.current = page.entity;
      var more = $("more-relations");
      var shown = state.offsets[id];
      more.hidden = shown >= page.total;
      more.textContent = "More relations of " + page.entity.name + " (" + shown + " of " +
        page.total + " shown)";
      var list = $("relations-list");
      clear(list);
      page.relations.forEach(function (r) {
        var passages = r.passages.length + r.more_passages;
        list.appendChild(el("li", null, r.text + (passages ? "  [" + plural(passages,
          "passage") + "]" : "")));
      });
      status("entity-status", expansion(page.entity.name, page.entity.id, result));
    }, function (error) { if (current()) status("entity-status", error.message, true); });
  }

  /* ---------------------------------------------------------------- communities */

  function loadReports(offset) {
    var params = { offset: offset, limit: 20 };
    if ($("level").value) params.level = $("level").value;
    api("/api/communities", params).then(function (data) {
      var box = $("reports");
      if (offset === 0) clear(box);
      if (!data.built) {
        status("communities-status", data.message);
        return;
      }
      data.reports.forEach(function (r) {
        var findings = el("ul", { "class": "gr-relations" });
        r.findings.forEach(function (f) {
          findings.appendChild(el("li", null, el("strong", null, f[0]), " " + f[1]));
        });
        box.appendChild(el("div", { "class": "gr-card gr-report", "data-community": r.id },
          el("div", { "class": "gr-head" }, el("strong", null, r.title),
             el("span", { "class": "gr-score" }, "rating " + r.rating.toFixed(1) + " · " +
               r.size + " entities · " + r.kind)),
          el("div", { "class": "gr-text" }, r.summary), findings,
          el("div", { "class": "ex-muted" }, r.entities.map(function (e) { return e.name; })
            .join(", "))));
      });
      state.reportOffset = data.offset + data.reports.length;
      $("more-reports").hidden = state.reportOffset >= data.total;
      status("communities-status", "Level " + data.level + ": " + data.total + " reports, " +
        state.reportOffset + " shown");
    }, function (error) { status("communities-status", error.message, true); });
  }

  /* ---------------------------------------------------------------- passages */

  function loadPassages(offset) {
    api("/api/passages", { offset: offset, limit: 20 }).then(function (data) {
      var box = $("passages");
      clear(box);
      data.passages.forEach(function (p) {
        var triplets = el("ul", { "class": "ex-triplets" });
        p.triplets.forEach(function (t) {
          triplets.appendChild(el("li", null, t[0] + " — " + t[1] + " — " + t[2]));
        });
        box.appendChild(el("div", { "class": "gr-card gr-passage", "data-passage-id": p.id },
          el("div", { "class": "gr-text" }, p.text), triplets));
      });
      state.passageOffset = data.offset;
      $("passages-range").textContent = data.total ? (data.offset + 1) + "–" +
        (data.offset + data.passages.length) + " of " + data.total : "no passages";
      $("passages-prev").disabled = data.offset === 0;
      $("passages-next").disabled = data.offset + data.passages.length >= data.total;
    }, function (error) {
      $("passages-range").textContent = "The passages could not be read: " + error.message;
    });
  }

  /* ---------------------------------------------------------------- start */

  document.querySelectorAll(".ex-tabs button").forEach(function (button) {
    button.addEventListener("click", function () { showTab(button.getAttribute("data-tab")); });
  });
  $("ask-form").addEventListener("submit", ask);
  $("entity-form").addEventListener("submit", searchEntities);
  $("more-relations").addEventListener("click", function () {
    if (state.current) expandEntity(state.current.id);
  });
  $("more-reports").addEventListener("click", function () { loadReports(state.reportOffset); });
  $("level").addEventListener("change", function () { loadReports(0); });
  $("passages-prev").addEventListener("click", function () {
    loadPassages(Math.max(0, state.passageOffset - 20));
  });
  $("passages-next").addEventListener("click", function () {
    loadPassages(state.passageOffset + 20);
  });
  api("/api/summary").then(showSummary, function (error) {
    $("summary-line").textContent = "The index could not be read: " + error.message;
  });
})();
