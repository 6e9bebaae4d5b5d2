/* The explanation view of llama_index_graphrag_milvus (the standalone page and the
 * explorer's "Ask" tab). Every text of the index (passages, entities, relations, reports)
 * goes into the page as a text node (textContent / createTextNode), never as HTML, and no
 * URL is ever built from it: a passage holding "<script>" shows as those characters. */
(function (root) {
  "use strict";

  var COLORS = { seed: "#2f6fd6", bridge: "#e8871e", found: "#2e9b48", pagerank: "#1f8a8a",
                 subgraph: "#7b43c9", context: "#8a6d3b" };
  var EDGE_COLORS = { bridge: "#e8871e", seed: "#2f6fd6", subgraph: "#7b43c9",
                      passage: "#2e9b48", context: "#8a6d3b", pool: "#aab2c0" };
  var NODE_ORDER = ["bridge", "seed", "found", "subgraph", "pagerank", "context"];

  /* el("div", {class: "x", "data-id": id}, child...): children are nodes or strings (text). */
  function el(tag, attrs) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (name) {
      if (attrs[name] !== null && attrs[name] !== undefined) {
        node.setAttribute(name, String(attrs[name]));
      }
    });
    for (var i = 2; i < arguments.length; i++) {
      var child = arguments[i];
      if (child === null || child === undefined) continue;
      node.appendChild(typeof child === "object" ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function fmt(value, digits) {
    return typeof value === "number" ? value.toFixed(digits === undefined ? 3 : digits) : "–";
  }

  function short(text, size) {
    text = String(text || "").replace(/\s+/g, " ").trim();
    return text.length > size ? text.slice(0, size - 1) + "…" : text;
  }

  function mainRole(roles) {
    for (var i = 0; i < NODE_ORDER.length; i++) {
      if (roles.indexOf(NODE_ORDER[i]) >= 0) return NODE_ORDER[i];
    }
    return "";
  }

  function edgeRole(roles) {
    var order = ["bridge", "seed", "subgraph", "passage", "context", "pool"];
    for (var i = 0; i < order.length; i++) if (roles.indexOf(order[i]) >= 0) return order[i];
    return "pool";
  }

  function nodeElement(node) {
    var roles = node.roles || [];
    return { group: "nodes", data: { id: node.id, name: node.name, roles: roles.join(" "),
             role: mainRole(roles), label: short(node.name, 40) },
             classes: roles.join(" ") };
  }

  function edgeElement(edge) {
    var roles = edge.roles || [];
    return { group: "edges", data: { id: "r:" + edge.id, relation: edge.id, source: edge.source,
             target: edge.target, label: short(edge.label, 36), text: edge.text,
             roles: roles.join(" "), role: edgeRole(roles) },
             classes: roles.join(" ") };
  }

  function graphStyle() {
    var style = [
      { selector: "node", style: { "label": "data(label)", "font-size": 13, "color": "#1d2330",
        "text-valign": "bottom", "text-margin-y": 3, "width": 18, "height": 18,
        "background-color": "#c3cad6", "border-width": 1, "border-color": "#7d8799",
        "text-wrap": "wrap", "text-max-width": 120 } },
      { selector: "edge", style: { "label": "data(label)", "font-size": 11, "color": "#4a5468",
        "curve-style": "bezier", "target-arrow-shape": "triangle", "width": 1.5,
        "line-color": EDGE_COLORS.pool, "target-arrow-color": EDGE_COLORS.pool,
        "text-rotation": "autorotate", "text-background-color": "#fbfcfe",
        "text-background-opacity": 0.8, "text-background-padding": 1 } },
      { selector: "node:selected", style: { "border-width": 3, "border-color": "#111" } }
    ];
    Object.keys(EDGE_COLORS).forEach(function (role) {
      style.push({ selector: "edge[role = '" + role + "']", style: {
        "line-color": EDGE_COLORS[role], "target-arrow-color": EDGE_COLORS[role],
        "width": role === "pool" ? 1 : 2.5 } });
    });
    NODE_ORDER.slice().reverse().forEach(function (role) {
      style.push({ selector: "node." + role, style: { "background-color": COLORS[role],
        "width": 24, "height": 24 } });
    });
    style.push({ selector: "node.seed", style: { "border-width": 3, "border-color": COLORS.seed } });
    style.push({ selector: "node.expanded", style: { "border-style": "double",
      "border-width": 4 } });
    return style;
  }

  /* A force-directed layout (Cytoscape's cose) from a circle: the same graph is drawn the
   * same way each time. */
  function layout(cy) {
    cy.layout({ name: "circle", animate: false }).run();
    cy.layout({ name: "cose", animate: false, randomize: false, padding: 30, fit: true,
                nodeRepulsion: function () { return 60000; }, nodeOverlap: 20,
                idealEdgeLength: function () { return 70; }, numIter: 1500 }).run();
  }

  /* A Cytoscape graph in `container` for a GraphView ({nodes, edges}); `onEntity(id, name,
   * cy)` is called when an entity is clicked. */
  function drawGraph(container, view, onEntity, detail) {
    var elements = (view.nodes || []).map(nodeElement).concat((view.edges || []).map(edgeElement));
    var cy = root.cytoscape({ container: container, elements: elements, style: graphStyle(),
                              minZoom: 0.1, maxZoom: 1.4 });
    layout(cy);
    cy.on("tap", "node", function (event) {
      var node = event.target;
      if (detail) {
        detail.textContent = node.data("name") + (node.data("roles") ? "  (" +
          node.data("roles") + ")" : "");
      }
      if (onEntity) onEntity(node.id(), node.data("name"), cy);
    });
    cy.on("tap", "edge", function (event) {
      if (detail) detail.textContent = event.target.data("text");
    });
    container.graphragCy = cy;
    return cy;
  }

  /* Add an entity's neighbourhood page ({entity, relations, total, offset}) to a graph. */
  function addNeighbourhood(cy, page) {
    var added = [];
    function addNode(entity) {
      if (cy.getElementById(entity.id).empty()) {
        added.push({ group: "nodes", data: { id: entity.id, name: entity.name,
                     label: short(entity.name, 40), roles: "", role: "" } });
      }
    }
    addNode(page.entity);
    page.relations.forEach(function (relation) {
      addNode(relation.subject);
      addNode(relation.object);
      if (cy.getElementById("r:" + relation.id).empty()) {
        added.push({ group: "edges", data: { id: "r:" + relation.id, relation: relation.id,
                     source: relation.subject.id, target: relation.object.id,
                     label: short(relation.label, 36), text: relation.text, roles: "",
                     role: "pool" } });
      }
    });
    var seen = {};
    added = added.filter(function (item) {
      if (seen[item.data.id]) return false;
      seen[item.data.id] = true;
      return true;
    });
    cy.add(added);
    cy.getElementById(page.entity.id).addClass("expanded");
    layout(cy);
    return added.length;
  }

  function legend() {
    var box = el("div", { "class": "gr-legend" });
    [["seed", "seed (matched the question)"], ["bridge", "bridge entity"],
     ["found", "in a returned passage"], ["subgraph", "Steiner tree"],
     ["pagerank", "top PageRank"], ["context", "local search entity"]].forEach(function (item) {
      var span = el("span", { "data-role": item[0] }, item[1]);
      span.style.setProperty("--c", COLORS[item[0]]);
      box.appendChild(span);
    });
    return box;
  }

  function passageCard(step, naive) {
    var badge = naive
      ? (step.graph_rank ? el("span", { "class": "gr-badge" }, "graph #" + step.graph_rank)
                         : el("span", { "class": "gr-badge missed" }, "not in the graph's list"))
      : el("span", { "class": "gr-badge found-" + step.found_by },
           step.bridge ? "bridge: " + step.bridge : step.found_by);
    var card = el("li", { "class": "gr-card gr-passage", "data-passage-id": step.id,
                          "data-found-by": naive ? "naive" : step.found_by,
                          "data-bridge": naive ? null : step.bridge },
      el("div", { "class": "gr-head" }, el("span", { "class": "gr-rank" }, "#" + step.rank),
         el("span", { "class": "gr-score" }, "score " + fmt(step.score)), badge,
         !naive && step.naive_rank ? el("span", { "class": "gr-badge" }, "naive #" +
           step.naive_rank) : null),
      naive ? null : el("div", { "class": "gr-reason" }, step.reason),
      el("div", { "class": "gr-text" }, step.text));
    if (!naive && step.relations && step.relations.length) {
      var list = el("ul", { "class": "gr-relations" });
      step.relations.slice(0, 6).forEach(function (relation) {
        list.appendChild(el("li", null, relation.text + "  (" + fmt(relation.score) + ")"));
      });
      card.appendChild(list);
    }
    return card;
  }

  function table(headers, rows) {
    var head = el("tr", null);
    headers.forEach(function (h) { head.appendChild(el("th", null, h)); });
    var body = el("tbody", null);
    rows.forEach(function (row) {
      var tr = el("tr", null);
      row.forEach(function (cell) {
        tr.appendChild(cell && cell.nodeType ? cell : el("td", null, cell));
      });
      body.appendChild(tr);
    });
    return el("table", { "class": "gr-table" }, el("thead", null, head), body);
  }

  function section(title, count, content, open) {
    var box = el("details", { "class": "gr-step", "data-step": title }, el("summary", null,
      title + (count === null ? "" : " (" + count + ")")), content);
    if (open) box.setAttribute("open", "");
    return box;
  }

  function listsTable(data) {
    var lists = data.candidate_lists;
    var label = {};
    data.passages.concat(data.naive).forEach(function (p) { label[p.id] = short(p.text, 48); });
    var taken = {};
    data.passages.forEach(function (p) {
      if (p.round !== null && p.round !== undefined) {
        taken[p.id] = p.found_by === "bridge" ? p.bridge : "question";
      }
    });
    var depth = Math.min(10, Math.max.apply(null, lists.map(function (l) {
      return l.passages.length; })));
    var rows = [];
    for (var i = 0; i < depth; i++) {
      var row = ["round " + (i + 1)];
      lists.forEach(function (l) {
        var item = l.passages[i];
        if (!item) { row.push(""); return; }
        var name = l.bridge || "question";
        var cell = el("td", { "class": taken[item.id] === name ? "taken" : "" },
                      (label[item.id] || item.id.slice(0, 8)) + " (" + fmt(item.similarity) + ")");
        row.push(cell);
      });
      rows.push(row);
    }
    return table([""].concat(lists.map(function (l) {
      return l.bridge ? "bridge " + l.bridge + ": " + l.query : "question";
    })), rows);
  }

  function steps(data) {
    var box = el("div", { "class": "gr-steps" });
    if (data.entity_seeds.length || data.relation_seeds.length) {
      box.appendChild(section("Seeds", data.entity_seeds.length + data.relation_seeds.length,
        el("div", null,
           data.entity_seeds.length ? table(["entity", "searched", "similarity"],
             data.entity_seeds.map(function (s) { return [s.name, s.searched, fmt(s.score)]; }))
             : null,
           table(["relation most similar to the question", "similarity"],
             data.relation_seeds.map(function (r) { return [r.text, fmt(r.score)]; }))), true));
    }
    if (data.bridges.length) {
      box.appendChild(section("Bridges", data.bridges.length, table(
        ["bridge", "kind", "from the relation", "second query"],
        data.bridges.map(function (b) {
          return [b.name, b.kind + (b.fallback ? " (fallback)" : ""), b.relation.text,
                  b.second_query];
        })), true));
    }
    if (data.candidate_lists.length) {
      box.appendChild(section("Candidate lists, interleaved", data.candidate_lists.length,
        listsTable(data), true));
    }
    if (data.pool.length) {
      box.appendChild(section("k-hop pool", data.pool.length, table(
        ["relation", "hop", "similarity"],
        data.pool.map(function (r) { return [r.text, String(r.hop), fmt(r.score)]; }))));
    }
    if (data.pagerank.length) {
      box.appendChild(section("Top PageRank entities", data.pagerank.length, table(
        ["entity", "mass"], data.pagerank.map(function (m) { return [m.name, fmt(m.mass, 4)]; })),
        true));
    }
    if (data.subgraph.length) {
      box.appendChild(section("Steiner tree (PCST)", data.subgraph.length, table(
        ["relation", "similarity"],
        data.subgraph.map(function (r) { return [r.text, fmt(r.score)]; })), true));
    }
    if (data.reports.length) {
      var reports = el("div", null);
      data.reports.forEach(function (r) {
        reports.appendChild(el("div", { "class": "gr-card gr-report", "data-community": r.community_id },
          el("div", { "class": "gr-head" }, el("strong", null, r.title),
             el("span", { "class": "gr-score" }, "level " + r.level + ", rating " + fmt(r.rating, 1)
                + ", " + r.matched_passages + " matched passages"),
             el("span", { "class": "gr-badge" + (r.used ? "" : " missed") },
                r.used ? "in the context" : "over the budget")),
          el("div", { "class": "gr-text" }, short(r.text, 1200))));
      });
      box.appendChild(section("Community reports", data.reports.length, reports, true));
    }
    if (data.notes.length) {
      var notes = el("ul", null);
      data.notes.forEach(function (note) { notes.appendChild(el("li", null, note)); });
      box.appendChild(section("Notes", data.notes.length, notes, true));
    }
    box.appendChild(section("Settings", null, el("pre", { "class": "gr-pre" },
      JSON.stringify(data.settings, null, 1))));
    return box;
  }

  /* Render an explanation (Explanation.to_dict()) into `container`; options.onEntity(id,
   * name, cy) is called when an entity of the graph is clicked. Returns the Cytoscape core. */
  function render(container, data, options) {
    options = options || {};
    while (container.firstChild) container.removeChild(container.firstChild);
    container.classList.add("gr-explain");
    var timings = data.timings || {};
    container.appendChild(el("h1", null, "Why these passages?"));
    container.appendChild(el("div", { "class": "gr-question" }, data.question));
    container.appendChild(el("div", { "class": "gr-meta" }, "method " + data.method +
      " · retrieval " + fmt((timings.retrieval || 0) * 1000, 0) + " ms · " +
      data.graph.nodes.length + " entities, " + data.graph.edges.length + " relations drawn" +
      (data.graph.omitted ? " (" + data.graph.omitted + " more left out)" : "")));
    container.appendChild(legend());
    var graph = el("div", { "class": "gr-graph", "id": (container.id || "gr") + "-graph" });
    var detail = el("div", { "class": "gr-detail" }, "Click an entity or a relation.");
    container.appendChild(graph);
    container.appendChild(detail);
    var left = el("ol", { "class": "gr-list", "data-list": "graph" });
    data.passages.forEach(function (p) { left.appendChild(passageCard(p, false)); });
    var right = el("ol", { "class": "gr-list", "data-list": "naive" });
    data.naive.forEach(function (p) { right.appendChild(passageCard(p, true)); });
    container.appendChild(el("div", { "class": "gr-columns" },
      el("div", null, el("h2", null, "Graph retrieval (" + data.method + ")"), left),
      el("div", null, el("h2", null, "Naive RAG"), right)));
    container.appendChild(steps(data));
    return drawGraph(graph, data.graph, options.onEntity, detail);
  }

  root.GraphRAGExplain = { render: render, drawGraph: drawGraph, el: el, short: short,
                           addNeighbourhood: addNeighbourhood, layout: layout,
                           graphStyle: graphStyle };
})(window);
