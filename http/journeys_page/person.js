document.getElementById("state").textContent = "Loading";
