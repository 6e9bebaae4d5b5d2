/* The explanation view of llama_index_graphrag_milvus (the standalone page and the
 * explorer's "Ask" tab). Every text of the index (passages, entities, relations, reports)
 * goes into the page as a text node (textContent / createTextNode), never as HTML, and no
 * URL is ever built from it: a passage holding "<script>" shows as those characters. */
(function (root) {
  "use strict";

  var COLORS = { seed: "#2f6fd6", bridge: "#e8871e", found: "#2e9b48", pagerank: "#c2185b",
                 subgraph: "#7b43c9", context: "#8a6d3b" };
  var EDGE_COLORS = { bridge: "#e8871e", seed: "#2f6fd6", subgraph: "#7b43c9",
                      passage: "#2e9b48", context: "#8a6d3b", pool: "#aab2c0" };
  var NODE_ORDER = ["bridge", "seed", "found", "subgraph", "pagerank", "context"];
  var EDGE_ORDER = ["bridge", "seed", "subgraph", "passage", "context", "pool"];
  /* Each method's own roles first: a node takes the colour of its first role in this order
   * (a PageRank node that is also in a returned passage is drawn as PageRank's). */
  var METHOD_ROLES = { bridge: ["bridge", "seed", "found"], ppr: ["pagerank", "seed", "found"],
                       pcst: ["subgraph", "seed", "found"], khop: ["seed", "found"],
                       local: ["context", "seed", "found"] };
  var NODE_NAMES = { seed: "seed (matched the question)", bridge: "bridge entity",
                     found: "in a returned passage", subgraph: "in the Steiner tree",
                     pagerank: "top PageRank", context: "local search entity",
                     "": "other entity" };
  var EDGE_NAMES = { bridge: "gave a bridge", seed: "matched the question",
                     subgraph: "Steiner tree relation", passage: "reached a returned passage",
                     context: "local search relation", pool: "other relation" };
  var NODE_FONT = 13;
  var EDGE_FONT = 11;

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

  function roleOrder(method) {
    var own = METHOD_ROLES[method] || [];
    return own.concat(NODE_ORDER.filter(function (r) { return own.indexOf(r) < 0; }));
  }

  function mainRole(roles, order) {
    for (var i = 0; i < order.length; i++) {
      if (roles.indexOf(order[i]) >= 0) return order[i];
    }
    return "";
  }

  function edgeRole(roles) {
    for (var i = 0; i < EDGE_ORDER.length; i++) {
      if (roles.indexOf(EDGE_ORDER[i]) >= 0) return EDGE_ORDER[i];
    }
    return "pool";
  }

  function nodeElement(node, order) {
    var roles = node.roles || [];
    return { group: "nodes", data: { id: node.id, name: node.name, roles: roles.join(" "),
             role: mainRole(roles, order), label: short(node.name, 40) },
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
      { selector: "node", style: { "label": "data(label)", "font-size": NODE_FONT,
        "color": "#1d2330", "text-valign": "bottom", "text-margin-y": 3, "width": 18,
        "height": 18, "background-color": "#c3cad6", "border-width": 1,
        "border-color": "#7d8799", "text-wrap": "wrap", "text-max-width": 130,
        "text-background-color": "#fbfcfe", "text-background-opacity": 0.9,
        "text-background-shape": "roundrectangle", "text-background-padding": 2 } },
      { selector: "edge", style: { "label": "data(label)", "font-size": EDGE_FONT,
        "color": "#4a5468", "curve-style": "bezier", "target-arrow-shape": "triangle",
        "width": 1.5, "line-color": EDGE_COLORS.pool, "target-arrow-color": EDGE_COLORS.pool,
        "text-rotation": "autorotate", "text-background-color": "#fbfcfe",
        "text-background-opacity": 1, "text-background-padding": 1,
        "text-background-shape": "roundrectangle" } },
      { selector: "node:selected", style: { "border-width": 3, "border-color": "#111" } }
    ];
    EDGE_ORDER.forEach(function (role) {
      style.push({ selector: "edge[role = '" + role + "']", style: {
        "line-color": EDGE_COLORS[role], "target-arrow-color": EDGE_COLORS[role],
        "width": role === "pool" ? 1 : 2.5 } });
    });
    NODE_ORDER.forEach(function (role) {
      style.push({ selector: "node[role = '" + role + "']", style: {
        "background-color": COLORS[role], "width": 24, "height": 24 } });
    });
    style.push({ selector: "node.seed", style: { "border-width": 3, "border-color": COLORS.seed } });
    style.push({ selector: "node.expanded", style: { "border-style": "double",
      "border-width": 4 } });
    return style;
  }

  /* Stretch the drawing towards the container's shape (a wide canvas gets a wide graph, so
   * the fit zooms in and the labels stay legible), at most 2.5 times along one axis. */
  function stretch(cy) {
    var width = cy.width(), height = cy.height();
    var box = cy.nodes().boundingBox({ includeLabels: false });
    if (!width || !height || cy.nodes().length < 3 || !box.w || !box.h) return;
    var want = width / height, have = box.w / box.h;
    var sx = have < want ? Math.min(want / have, 2.5) : 1;
    var sy = have > want ? Math.min(have / want, 2.5) : 1;
    var cx = (box.x1 + box.x2) / 2, cyy = (box.y1 + box.y2) / 2;
    cy.nodes().positions(function (node) {
      var p = node.position();
      return { x: cx + (p.x - cx) * sx, y: cyy + (p.y - cyy) * sy };
    });
  }

  /* Shrink the drawing towards its centre until it would fit the canvas at zoom 1:
   * force-directed layouts leave wide gaps; separate() then opens what is needed. */
  function compact(cy) {
    var box = cy.nodes().boundingBox({ includeLabels: true });
    var scale = Math.min((cy.width() - 48) / box.w, (cy.height() - 48) / box.h);
    if (!(scale < 1)) return;
    var cx = (box.x1 + box.x2) / 2, cyy = (box.y1 + box.y2) / 2;
    cy.nodes().positions(function (node) {
      var p = node.position();
      return { x: cx + (p.x - cx) * scale, y: cyy + (p.y - cyy) * scale };
    });
  }

  var measure = null;
  var SLACK = 0.5;  /* pixels of overlap that count as none (rounding) */

  /* The width of a text at a font size, as the canvas draws it (Cytoscape's font). */
  function textWidth(text, size) {
    if (!measure) measure = document.createElement("canvas").getContext("2d");
    measure.font = size + "px Helvetica Neue, Helvetica, sans-serif";
    return measure.measureText(String(text || "")).width;
  }

  /* Where a ray from a box's centre along (ux, uy) leaves the box (its offsets l r t b). */
  function exit(box, ux, uy) {
    var tx = ux > 0 ? box.r / ux : ux < 0 ? box.l / ux : Infinity;
    var ty = uy > 0 ? box.b / uy : uy < 0 ? box.t / uy : Infinity;
    return Math.min(tx, ty);
  }

  /* Move entities until no two label boxes (an entity with its label) overlap, every
   * relation's label fits on its edge between its ends' boxes, and no edge crosses another
   * entity's box (with room for its label around the middle): each pass undoes the
   * conflicts it finds (two boxes: the smaller overlap, half by each; an edge too short for
   * its label: lengthened; a box on another edge: moved off it, across). Deterministic;
   * at most 300 passes. */
  function separate(cy, margin) {
    var nodes = cy.nodes().toArray();
    var index = {};
    var boxes = nodes.map(function (node, k) {
      index[node.id()] = k;
      var p = node.position();
      var b = node.boundingBox({ includeLabels: true, includeOverlays: false });
      return { x: p.x, y: p.y, l: b.x1 - p.x, r: b.x2 - p.x, t: b.y1 - p.y, b: b.y2 - p.y };
    });
    var labels = cy.edges().toArray().filter(function (edge) {
      return edge.source().id() !== edge.target().id();
    }).map(function (edge) {
      return { s: index[edge.source().id()], t: index[edge.target().id()],
               half: textWidth(edge.data("label"), EDGE_FONT) / 2 + 2, thick: EDGE_FONT / 2 + 2 };
    });
    function push(k, dx, dy) { boxes[k].x += dx; boxes[k].y += dy; }
    for (var pass = 0; pass < 300; pass++) {
      var moved = false;
      for (var i = 0; i < boxes.length; i++) {
        for (var j = i + 1; j < boxes.length; j++) {
          var a = boxes[i], c = boxes[j];
          var ox = Math.min(a.x + a.r, c.x + c.r) - Math.max(a.x + a.l, c.x + c.l) + margin;
          var oy = Math.min(a.y + a.b, c.y + c.b) - Math.max(a.y + a.t, c.y + c.t) + margin;
          if (ox <= SLACK || oy <= SLACK) continue;
          moved = true;
          if (ox < oy) {
            var dx = a.x <= c.x ? -ox / 2 : ox / 2;
            push(i, dx, 0); push(j, -dx, 0);
          } else {
            var dy = a.y <= c.y ? -oy / 2 : oy / 2;
            push(i, 0, dy); push(j, 0, -dy);
          }
        }
      }
      labels.forEach(function (label) {
        var s = boxes[label.s], t = boxes[label.t];
        var vx = t.x - s.x, vy = t.y - s.y, length = Math.sqrt(vx * vx + vy * vy) || 1;
        var ux = vx / length, uy = vy / length;
        var need = Math.max(exit(s, ux, uy), exit(t, -ux, -uy)) + label.half + margin;
        if (length / 2 < need - SLACK) {  // the label does not fit between its ends
          var grow = need - length / 2;
          push(label.s, -ux * grow, -uy * grow); push(label.t, ux * grow, uy * grow);
          moved = true;
          return;
        }
        for (var k = 0; k < boxes.length; k++) {
          if (k === label.s || k === label.t) continue;
          var box = boxes[k];
          // the box's extent along the edge (u) and across it (n = (-uy, ux))
          var cu = [box.l * ux + box.t * uy, box.r * ux + box.t * uy,
                    box.l * ux + box.b * uy, box.r * ux + box.b * uy];
          var cn = [-box.l * uy + box.t * ux, -box.r * uy + box.t * ux,
                    -box.l * uy + box.b * ux, -box.r * uy + box.b * ux];
          var along = (box.x - s.x) * ux + (box.y - s.y) * uy;
          var side = -(box.x - s.x) * uy + (box.y - s.y) * ux;
          var from = along + Math.min.apply(null, cu), to = along + Math.max.apply(null, cu);
          if (to <= 0 || from >= length) continue;
          var onLabel = to > length / 2 - label.half && from < length / 2 + label.half;
          var gap = (onLabel ? label.thick : 1) + margin;
          var low = side + Math.min.apply(null, cn), high = side + Math.max.apply(null, cn);
          if (low >= gap - SLACK || high <= -gap + SLACK) continue;
          var away = side >= 0 ? gap - low : -(gap + high);  // off the line, on its side
          push(k, -uy * away, ux * away);
          moved = true;
        }
      });
      if (!moved) break;
    }
    nodes.forEach(function (node, k) { node.position({ x: boxes[k].x, y: boxes[k].y }); });
    return pass;
  }

  /* Cytoscape's force-directed layout (cose) from a circle, so the same graph is drawn the
   * same way each time: node sizes include their labels, and an edge is long enough for its
   * label; then stretched to the canvas, label boxes moved apart, and fitted. */
  function layout(cy) {
    if (cy.nodes().empty()) return;
    cy.layout({ name: "circle", animate: false, fit: false }).run();
    cy.layout({ name: "cose", animate: false, randomize: false, fit: false,
                nodeDimensionsIncludeLabels: true, nodeOverlap: 40,
                nodeRepulsion: function () { return 200000; },
                idealEdgeLength: function (edge) {
                  return Math.max(70, String(edge.data("label") || "").length * EDGE_FONT * 0.6 + 40);
                },
                numIter: 1500 }).run();
    stretch(cy);
    compact(cy);
    cy.scratch("graphragPasses", separate(cy, 4));
    cy.fit(undefined, 24);
  }

  /* A Cytoscape graph in `container` for a GraphView ({nodes, edges}); `onEntity(id, name,
   * cy)` is called when an entity is clicked; `method` orders the node roles (its own
   * first). */
  function drawGraph(container, view, onEntity, detail, method) {
    var order = roleOrder(method);
    var elements = (view.nodes || []).map(function (node) { return nodeElement(node, order); })
      .concat((view.edges || []).map(edgeElement));
    var cy = root.cytoscape({ container: container, elements: elements, style: graphStyle(),
                              minZoom: 0.1, maxZoom: 1.6 });
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

  /* Add an entity's neighbourhood page ({entity, relations, total, offset}) to a graph;
   * returns the number of relations that were not drawn yet. */
  function addNeighbourhood(cy, page) {
    var added = [];
    var relations = 0;
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
        relations += 1;
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
    if (added.length) layout(cy);
    return relations;
  }

  function swatch(kind, role, color, text) {
    var span = el("span", kind === "node" ? { "data-role": role } : { "data-edge-role": role,
                      "class": "gr-edge-swatch" }, text);
    span.style.setProperty("--c", color);
    return span;
  }

  /* The legend of what is drawn: the node colours in use (each method's own roles), the
   * seed ring when seeds are drawn in another colour, and the relation colours in use. */
  function legend(cy, method) {
    var box = el("div", { "class": "gr-legend" });
    var nodeRoles = {}, edgeRoles = {}, ringed = false;
    cy.nodes().forEach(function (node) {
      nodeRoles[node.data("role")] = true;
      if (node.hasClass("seed") && node.data("role") !== "seed") ringed = true;
    });
    cy.edges().forEach(function (edge) { edgeRoles[edge.data("role")] = true; });
    roleOrder(method).concat([""]).forEach(function (role) {
      if (nodeRoles[role]) {
        box.appendChild(swatch("node", role, COLORS[role] || "#c3cad6", NODE_NAMES[role]));
      }
    });
    if (ringed) {
      var ring = el("span", { "data-role": "seed-ring", "class": "gr-ring" }, "blue ring: seed");
      ring.style.setProperty("--c", COLORS.seed);
      box.appendChild(ring);
    }
    EDGE_ORDER.forEach(function (role) {
      if (edgeRoles[role]) box.appendChild(swatch("edge", role, EDGE_COLORS[role], EDGE_NAMES[role]));
    });
    return box;
  }

  /* How a passage scored, rank apart: its similarity to the query that found it (the
   * question, a bridge's second query), PageRank's mass, or the best relation's similarity;
   * the retriever's own score is in the card's title (see docs/retrieval.md). */
  function scoreText(step, scoring, naive) {
    if (naive) return "similarity " + fmt(step.score);
    var parts = [];
    if (step.found_by === "ppr") parts.push("PageRank mass " + fmt(step.score, 4));
    if (typeof step.similarity === "number") {
      parts.push("similarity " + fmt(step.similarity) + (step.found_by === "bridge"
        ? " to its second query" : step.found_by === "question" ? " to the question" : ""));
    } else if (typeof step.words === "number") {
      parts.push("found by its words, BM25 " + fmt(step.words));
    } else if (scoring === "relation") {
      parts.push("best relation's similarity " + fmt(step.score));
    } else if (step.found_by !== "ppr" && typeof step.score === "number") {
      parts.push("similarity " + fmt(step.score));
    }
    return parts.join(" · ");
  }

  function passageCard(step, naive, scoring) {
    var badge = naive
      ? (step.graph_rank ? el("span", { "class": "gr-badge" }, "graph #" + step.graph_rank)
                         : el("span", { "class": "gr-badge missed" }, "not in the graph's list"))
      : el("span", { "class": "gr-badge found-" + step.found_by },
           step.bridge ? "bridge: " + step.bridge : step.found_by);
    var card = el("li", { "class": "gr-card gr-passage", "data-passage-id": step.id,
                          "data-found-by": naive ? "naive" : step.found_by,
                          "data-bridge": naive ? null : step.bridge,
                          "title": naive ? null : "the retriever's score: " + fmt(step.score) },
      el("div", { "class": "gr-head" }, el("span", { "class": "gr-rank" }, "#" + step.rank),
         el("span", { "class": "gr-score" }, scoreText(step, scoring, naive)), badge,
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
    headers.forEach(function (h) {
      head.appendChild(h && h.nodeType ? h : el("th", null, h));
    });
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
      var row = [el("th", { "class": "gr-nowrap", "scope": "row" }, "round " + (i + 1))];
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
    var headers = [""].concat(lists.map(function (l) {
      return el("th", { "title": "searched: " + l.query },
                l.bridge ? "bridge " + l.bridge : "the question");
    }));
    return table(headers, rows);
  }

  function secondQuery(bridge) {
    return el("td", null, el("div", null, bridge.reading || bridge.second_query),
              el("div", { "class": "gr-embedded" }, "embedded text: " + bridge.second_query));
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
                  secondQuery(b)];
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
    var scoring = data.method === "khop" ? (data.settings || {}).passage_scoring || "khop"
                                         : data.method;
    container.appendChild(el("h1", null, "Why these passages?"));
    container.appendChild(el("div", { "class": "gr-question" }, data.question));
    container.appendChild(el("div", { "class": "gr-meta" }, "method " + scoring +
      " · retrieval " + fmt((timings.retrieval || 0) * 1000, 0) + " ms · " +
      (data.milvus_requests == null ? "" : data.milvus_requests + " Milvus requests · ") +
      data.graph.nodes.length + " entities, " + data.graph.edges.length + " relations drawn" +
      (data.graph.omitted ? " (" + data.graph.omitted + " more left out)" : "")));
    var legendSlot = el("div", null);
    container.appendChild(legendSlot);
    var graph = el("div", { "class": "gr-graph", "id": (container.id || "gr") + "-graph" });
    var detail = el("div", { "class": "gr-detail" }, "Click an entity or a relation.");
    container.appendChild(graph);
    container.appendChild(detail);
    var left = el("ol", { "class": "gr-list", "data-list": "graph" });
    data.passages.forEach(function (p) { left.appendChild(passageCard(p, false, scoring)); });
    var right = el("ol", { "class": "gr-list", "data-list": "naive" });
    data.naive.forEach(function (p) { right.appendChild(passageCard(p, true, scoring)); });
    container.appendChild(el("div", { "class": "gr-columns" },
      el("div", null, el("h2", null, "Graph retrieval (" + scoring + ")"), left),
      el("div", null, el("h2", null, "Naive RAG"), right)));
    container.appendChild(steps(data));
    var cy = drawGraph(graph, data.graph, options.onEntity, detail, data.method);
    legendSlot.appendChild(legend(cy, data.method));
    return cy;
  }

  root.GraphRAGExplain = { render: render, drawGraph: drawGraph, el: el, short: short,
                           addNeighbourhood: addNeighbourhood, layout: layout,
                           graphStyle: graphStyle, legend: legend };
})(window);
